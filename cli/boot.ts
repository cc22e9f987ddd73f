import type { Static } from '@sinclair/typebox';
import type { Command } from 'commander';
import { ConfigError, loadConfig, type Config, type ConfigSchema, type DeepPartial, type Role, createLogger, type Logger } from '../config/index.js';

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
  let config: Config;
  try {
    config = loadConfig(overrides, process.env, { role, ...configSources(cmd), onWarning: (m) => warnings.push(m) });
  } catch (err) {
    throw err instanceof ConfigError ? new ConfigError(namingFlags(err.message)) : err;
  }
  const log = createLogger(config);
  for (const w of warnings) log.warn(w);
  return { config, log };
}

/** The roles' flags by the setting they set: an error names the flag the operator typed. */
const FLAGS: Record<string, string> = {
  'listen.port': '--port',
  'listen.address': '--listen',
  host: '--host',
  dataDir: '--data-dir',
  natsUrl: '--nats',
  databaseUrl: '--database',
  'distributed.subjectPrefix': '--prefix',
  'distributed.metricsPort': '--metrics-port',
  'distributed.conductorId': '--conductor-id',
  'distributed.leaseTtlMs': '--lease-ttl-ms',
  'fake.gpus': '--fake-gpus',
  'fake.nics': '--fake-nics',
};

/** `the command line (listen.port)` as `--port`. */
function namingFlags(message: string): string {
  return message.replace(/the command line \(([\w.]+)\)/g, (whole, path: string) => FLAGS[path] ?? whole);
}
