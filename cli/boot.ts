import type { Static } from '@sinclair/typebox';
import type { Command } from 'commander';
import { loadConfig, type Config, type ConfigSchema, type DeepPartial, type Role } from '../config/index.js';
import { createLogger, type Logger } from '../config/logger.js';

/** `--config-file PATH` (repeatable, later files win), on the program and every subcommand. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** `--config-file` and `--config-dir` as given on the command line (the program's or the subcommand's). */
export function configSources(cmd: Command): { configFiles?: string[]; configDirs?: string[] } {
  const { configFile, configDir } = cmd.optsWithGlobals<{ configFile?: string[]; configDir?: string[] }>();
  return { ...(configFile ? { configFiles: configFile } : {}), ...(configDir ? { configDirs: configDir } : {}) };
}

/**
 * A role's boot: the configuration from flags, environment and config file, validated once, and
 * the logger it asks for; what the file held that nothing reads is said in that log.
 */
export function boot(cmd: Command, role: Role, overrides: DeepPartial<Static<typeof ConfigSchema>>): { config: Config; log: Logger } {
  const warnings: string[] = [];
  const config = loadConfig(overrides, process.env, { role, ...configSources(cmd), onWarning: (m) => warnings.push(m) });
  const log = createLogger(config);
  for (const w of warnings) log.warn(w);
  return { config, log };
}
