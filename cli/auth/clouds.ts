import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { ClientConfigError } from './errors.js';

/** One cloud of clouds.yaml, keys normalised to underscores as openstacksdk does. */
export interface CloudEntry {
  auth?: Record<string, string>;
  auth_type?: string;
  region_name?: string;
  regions?: (string | { name: string })[];
  interface?: string;
  [key: string]: unknown;
}

/** Where to look: the process's working directory, home and environment (tests give their own). */
export interface SearchContext {
  cwd: string;
  home: string;
  env: NodeJS.ProcessEnv;
}

const NAMES = ['clouds.yaml', 'clouds.yml', 'clouds.json'];
const SECURE = ['secure.yaml', 'secure.yml', 'secure.json'];

/**
 * openstacksdk's search path (`openstack.config.loader`): `OS_CLIENT_CONFIG_FILE` (or
 * `OS_CLIENT_SECURE_FILE`) first, then the working directory, `$XDG_CONFIG_HOME/openstack`
 * (`~/.config/openstack`) and `/etc/openstack`. The first file found is the one read.
 */
export function searchPath(ctx: SearchContext, secure = false): string[] {
  const configHome = ctx.env.XDG_CONFIG_HOME || join(ctx.home, '.config');
  const dirs = [ctx.cwd, join(configHome, 'openstack'), '/etc/openstack'];
  const own = secure ? ctx.env.OS_CLIENT_SECURE_FILE : ctx.env.OS_CLIENT_CONFIG_FILE;
  return [...(own ? [own] : []), ...dirs.flatMap((d) => (secure ? SECURE : NAMES).map((n) => join(d, n)))];
}

export function defaultSearchContext(): SearchContext {
  return { cwd: process.cwd(), home: homedir(), env: process.env };
}

function readYaml(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ClientConfigError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` (line ${err.linePos[0].line}, column ${err.linePos[0].col})` : '';
    const first = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new ClientConfigError(`${path} is not valid YAML${where}: ${first}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ClientConfigError(`${path}: expected a mapping with "clouds:" at the top`);
  return doc as Record<string, unknown>;
}

/** openstacksdk accepts `project-name` and `project_name` alike. */
function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalise);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.replace(/-/g, '_'), normalise(v)]));
}

/** secure.yaml's values over clouds.yaml's, mapping by mapping (openstacksdk's merge). */
function merge(base: unknown, over: unknown): unknown {
  if (base === null || typeof base !== 'object' || Array.isArray(base) || over === null || typeof over !== 'object' || Array.isArray(over)) return over ?? base;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over)) out[k] = merge(out[k], v);
  return out;
}

/** Every cloud clouds.yaml (merged with secure.yaml) names, and the files they came from. */
export function loadClouds(ctx: SearchContext = defaultSearchContext()): { clouds: Record<string, CloudEntry>; files: string[] } {
  const file = searchPath(ctx).find((p) => existsSync(p));
  const secure = searchPath(ctx, true).find((p) => existsSync(p));
  const files = [file, secure].filter((f): f is string => f !== undefined);
  let doc: unknown = {};
  for (const f of files) doc = merge(doc, normalise(readYaml(f)));
  const clouds = (doc as { clouds?: unknown }).clouds ?? {};
  if (typeof clouds !== 'object' || clouds === null || Array.isArray(clouds))
    throw new ClientConfigError(`${file ?? secure}: "clouds" must be a mapping of cloud names`);
  return { clouds: clouds as Record<string, CloudEntry>, files };
}

/**
 * The cloud named by `OS_CLOUD` / `--os-cloud`. An unknown name is refused naming the files
 * searched and the clouds they hold, as `openstack` does ("Cloud x was not found").
 */
export function findCloud(name: string, ctx: SearchContext = defaultSearchContext()): CloudEntry {
  const { clouds, files } = loadClouds(ctx);
  const cloud = clouds[name];
  if (cloud && typeof cloud === 'object') return cloud;
  if (!files.length)
    throw new ClientConfigError(
      `cloud "${name}" was not found: no clouds.yaml in ${searchPath(ctx)
        .filter((p) => p.endsWith('clouds.yaml'))
        .join(', ')}`,
    );
  const known = Object.keys(clouds);
  throw new ClientConfigError(`cloud "${name}" was not found in ${files.join(' + ')} (clouds there: ${known.join(', ') || 'none'})`);
}
