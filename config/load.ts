import { hostname } from 'node:os';
import type { Static, TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { optionValue } from './coerce.js';
import { confFilesIn } from './config-dir.js';
import { ConfigError } from './errors.js';
import { fromFile } from './from-file.js';
import { readIniFile } from './ini.js';
import { OPTIONS } from './options.js';
import { PORTS } from './ports.js';
import { isListenAddress, parseTrustedProxy } from './proxies.js';
import { ConfigSchema, type Config, type DeepPartial, type Role } from './schema.js';
import { keepSources, shown } from './sources.js';
import { deepFreeze, merge, set, type Tree } from './tree.js';
import { checkXidPolicy } from './xid.js';

export interface LoadOptions {
  role?: Role;
  /** `--config-file` (repeatable; later files win); else `CYBORG_CONFIG_FILE`. */
  configFiles?: readonly string[];
  /** `--config-dir` (repeatable): each one's `*.conf`, by name, after the files; else `CYBORG_CONFIG_DIR`. */
  configDirs?: readonly string[];
  /** Unknown sections and options in the file; by default written to stderr. */
  onWarning?: (message: string) => void;
  /** The flags of this command by the setting they set (`listen.port` → `--port`): an error names the flag the operator typed. */
  flags?: Readonly<Record<string, string>>;
}

type Env = Record<string, string | undefined>;

/**
 * What differs by role. The api role listens where Nova and Keystone's catalog expect Cyborg
 * (6666); the all-in-one on a port browsers open (config/ports.ts). A production agent loads
 * only the drivers it is told to: no fake accelerators land in a real inventory.
 */
const ROLE_DEFAULTS: Record<Role, Tree> = {
  'all-in-one': {},
  // No visualizer listener unless asked (`[api] ui_port`): a default one on 6680 met the
  // all-in-one and the CLI's default on any machine where both run (issue 42).
  api: { listen: { port: PORTS.api } },
  conductor: {},
  agent: { agent: { enabledDrivers: [] } },
};

/**
 * Builds the configuration from defaults, the config file, the environment and `overrides` (CLI
 * flags), in that order of precedence, fills defaults and validates it once. Throws ConfigError
 * naming the file, section and option (or variable, or flag) of every bad value.
 */
export function loadConfig(overrides: DeepPartial<Static<typeof ConfigSchema>> = {}, env: Env = process.env, opts: LoadOptions = {}): Config {
  const role = opts.role;
  const source = new Map<string, string>();
  let tree: Tree = merge(
    {
      host: hostname(),
      logPretty: Boolean(process.stdout.isTTY),
      dataDir: '.cyborg',
      listen: {},
      fake: {},
      timing: {},
    },
    role ? ROLE_DEFAULTS[role] : {},
  );
  const files = [...(opts.configFiles?.length ? opts.configFiles : env.CYBORG_CONFIG_FILE ? [env.CYBORG_CONFIG_FILE] : [])];
  const dirs = opts.configDirs?.length ? opts.configDirs : env.CYBORG_CONFIG_DIR ? [env.CYBORG_CONFIG_DIR] : [];
  files.push(...dirs.flatMap(confFilesIn));
  const warn = opts.onWarning ?? ((m: string) => process.stderr.write(`cyborg: warning: ${m}\n`));
  for (const file of files) tree = merge(tree, fromFile(readIniFile(file), file, source, warn));
  tree = merge(tree, fromEnv(env, source));
  tree = merge(tree, noteSource(overrides as Tree, opts.flags ?? {}, source));
  const withDefaults = Value.Default(ConfigSchema, tree) as Tree & { distributed: Tree; agent: Tree; conductor: Tree };
  if (!source.has('distributed.metricsPort')) {
    withDefaults.distributed.metricsPort = role === 'agent' ? withDefaults.agent.metricsPort : withDefaults.conductor.metricsPort;
    const from = source.get(role === 'agent' ? 'agent.metricsPort' : 'conductor.metricsPort');
    if (from) source.set('distributed.metricsPort', from);
  }
  const errors = [...Value.Errors(ConfigSchema, withDefaults)];
  if (errors.length > 0) {
    const seen = new Set<string>();
    const lines = errors
      .map((e) => {
        const path = e.path
          .split('/')
          .filter((p) => p && !/^\d+$/.test(p))
          .join('.');
        const oneOf = Array.isArray(e.schema.anyOf) ? ` (one of ${(e.schema.anyOf as TSchema[]).map((x) => String(x.const)).join(', ')})` : '';
        const where = source.get(path) ?? (path || 'configuration');
        const value = e.value === undefined || (e.value !== null && typeof e.value === 'object') ? '' : ` = ${shown(e.value, path)}`;
        return `${where}${value}: ${e.message}${oneOf}`;
      })
      .filter((l) => !seen.has(l) && seen.add(l));
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  const config = Value.Clean(ConfigSchema, withDefaults) as Static<typeof ConfigSchema>;
  const problems = [...checkShapes(config, source), ...checkNamedSections(config, source)];
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  const frozen = deepFreeze(config);
  keepSources(frozen, source);
  return frozen;
}

/** Values a schema cannot test alone: the listen address is an address or a host name; each trusted proxy parses. */
function checkShapes(c: Static<typeof ConfigSchema>, source: Map<string, string>): string[] {
  const problems: string[] = [];
  if (!isListenAddress(c.listen.address))
    problems.push(
      `${source.get('listen.address') ?? '[api] host_ip'} = ${shown(c.listen.address, 'listen.address')}: not an IP address or a host name; set one of this machine's addresses, or 0.0.0.0 for all`,
    );
  for (const p of c.v2.trustedProxies)
    if (!parseTrustedProxy(p))
      problems.push(
        `${source.get('v2.trustedProxies') ?? '[api] trusted_proxies'} = ${shown(p, 'v2.trustedProxies')}: neither an IP address, a CIDR (10.0.0.0/8) nor "loopback"`,
      );
  return problems;
}

/** What one option cannot say alone: every enabled vGPU and NIC type has its section, and a GPU offers one vGPU type. */
function checkNamedSections(c: Static<typeof ConfigSchema>, source: Map<string, string>): string[] {
  const problems: string[] = [];
  const owner = new Map<string, string>();
  for (const t of c.gpu.enabledVgpuTypes) {
    const addresses = c.gpu.vgpuDeviceAddresses[t] ?? [];
    if (addresses.length === 0)
      problems.push(`${source.get('gpu.enabledVgpuTypes') ?? 'gpu.enabledVgpuTypes'}: vGPU type ${t} has no [vgpu_${t}] device_addresses`);
    for (const a of addresses) {
      const other = owner.get(a);
      if (other !== undefined)
        problems.push(
          `${source.get(`gpu.vgpuDeviceAddresses.${t}`) ?? `[vgpu_${t}] device_addresses`}: GPU ${a} already offers ${other} (one vGPU type per GPU)`,
        );
      owner.set(a, t);
    }
  }
  problems.push(...checkXidPolicy(c.gpu, source));
  for (const t of c.nic.enabledNicTypes) {
    if (!c.nic.types[t])
      problems.push(`${source.get('nic.enabledNicTypes') ?? 'nic.enabledNicTypes'}: NIC type ${t} has no [${t}] section with physical_device_mappings`);
  }
  return problems;
}

function fromEnv(env: Env, source: Map<string, string>): Tree {
  const out: Tree = {};
  for (const spec of OPTIONS) {
    const raw = spec.env ? env[spec.env] : undefined;
    if (raw === undefined || raw === '') continue;
    const where = `environment variable ${spec.env}`;
    set(out, spec.path, optionValue(spec, [raw], where, false));
    source.set(spec.path, where);
  }
  return out;
}

function noteSource(tree: Tree, flags: Readonly<Record<string, string>>, source: Map<string, string>, prefix = ''): Tree {
  for (const [k, v] of Object.entries(tree)) {
    if (v === undefined) continue;
    const path = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object' && !Array.isArray(v)) noteSource(v as Tree, flags, source, path);
    else source.set(path, flags[path] ?? `the command line (${path})`);
  }
  return tree;
}
