import type { Static } from '@sinclair/typebox';
import type { Command } from 'commander';
import { checkDriverSettings } from '../roles/drivers.js';
import { loadConfig, type Config, type ConfigSchema, type DeepPartial, type Role, createLogger, type Logger } from '../config/index.js';

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
  const config = loadConfig(typedOnly(cmd, overrides), process.env, { role, ...configSources(cmd), onWarning: (m) => warnings.push(m), flags: FLAGS });
  checkDriverSettings(config);
  const log = createLogger(config);
  for (const w of warnings) log.warn(w);
  return { config, log };
}

/**
 * The overrides without what commander took from the environment (`.env('CYBORG_PORT')` fills
 * `--port` from it): the loader reads those variables itself, and an error about one then names
 * the variable the operator set, not a flag they never typed.
 */
function typedOnly(cmd: Command, overrides: DeepPartial<Static<typeof ConfigSchema>>): DeepPartial<Static<typeof ConfigSchema>> {
  const out = structuredClone(overrides) as Record<string, unknown>;
  for (const [path, flag] of Object.entries(FLAGS)) {
    const attribute = flag.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    if (cmd.getOptionValueSource(attribute) !== 'env') continue;
    const keys = path.split('.');
    let t: Record<string, unknown> | undefined = out;
    for (const k of keys.slice(0, -1)) t = t?.[k] as Record<string, unknown> | undefined;
    if (t) delete t[keys.at(-1)!];
  }
  return out as DeepPartial<Static<typeof ConfigSchema>>;
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
