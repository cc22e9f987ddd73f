import { compareReleaseText as compareReleases, RELEASE } from '../release/index.js';

/**
 * Each release's migrations, split as a rolling upgrade needs them (docs/upgrade.md):
 * - expand: additive (new tables, nullable columns, new indexes); the previous release's roles
 *   run beside them, so `cyborg db migrate` runs them while the old fleet is up;
 * - contract: what needs every role upgraded (drops, renames, constraints); `cyborg db contract`
 *   runs them once no role of an older release is alive.
 * Every file in db/migrations is named here exactly once (db/releases.test.ts).
 */
export interface ReleaseMigrations {
  release: string;
  expand: readonly string[];
  contract: readonly string[];
}

export const MIGRATIONS: readonly ReleaseMigrations[] = [
  {
    release: '0.1.0',
    expand: [
      'Migration20261122103711_initial',
      'Migration20261122170000_flush_stamp',
      'Migration20261122200000_fk_indexes',
      'Migration20261123220000_audit',
      'Migration20261127050000_audit_names',
    ],
    contract: [],
  },
  {
    release: '0.2.0',
    expand: ['Migration20261202010000_schema_releases'],
    contract: ['Migration20261202010100_contract_old_history'],
  },
];

/** What the database holds: the migrations it ran and the releases whose phases ran (cyborg_schema_release). */
export interface SchemaState {
  applied: ReadonlySet<string>;
  releases: readonly { release: string; expanded: boolean; contracted: boolean }[];
}

export type Verdict = { ok: true; run: string[] } | { ok: false; reason: string };

interface Where {
  /** The database's release: the newest whose expand ran entirely; undefined when none has. */
  at?: string;
  /** Releases newer than this code's recorded in the database, and whether each was contracted. */
  ahead: { release: string; contracted: boolean }[];
  unknown: string[];
}

function where(state: SchemaState, manifest: readonly ReleaseMigrations[], mine: string): Where {
  const known = new Set(manifest.flatMap((r) => [...r.expand, ...r.contract]));
  let at: string | undefined;
  for (const r of manifest) if (r.expand.every((m) => state.applied.has(m))) at = r.release;
  const ahead = state.releases.filter((r) => compareReleases(r.release, mine) > 0).map((r) => ({ release: r.release, contracted: r.contracted }));
  for (const r of ahead) if (at === undefined || compareReleases(r.release, at) > 0) at = r.release;
  return { ...(at ? { at } : {}), ahead, unknown: [...state.applied].filter((m) => !known.has(m)) };
}

const index = (manifest: readonly ReleaseMigrations[], release: string): number => manifest.findIndex((r) => r.release === release);

/**
 * Whether a role of `mine` may start on this database: at its own revision (its expand ran,
 * its contract or not), or one release ahead in expand only. Anything else is refused in one line
 * that names the versions and the way out.
 */
export function startVerdict(state: SchemaState, manifest: readonly ReleaseMigrations[] = MIGRATIONS, mine = RELEASE): Verdict {
  const w = where(state, manifest, mine);
  const i = index(manifest, mine);
  const ahead = w.ahead.sort((a, b) => compareReleases(a.release, b.release));
  if (ahead.length > 1)
    return {
      ok: false,
      reason: `the database is at cyborg ${ahead.at(-1)!.release}'s schema, two releases or more ahead of this ${mine}: run ${ahead.at(-1)!.release}`,
    };
  if (ahead.length === 1 && ahead[0]!.contracted)
    return {
      ok: false,
      reason: `the database was contracted by cyborg ${ahead[0]!.release}: this ${mine} cannot run on it (a downgrade after contract is refused): run ${ahead[0]!.release}, or restore the backup taken before contract (docs/upgrade.md)`,
    };
  if (ahead.length === 0 && w.unknown.length > 0)
    return {
      ok: false,
      reason: `the database ran migrations this cyborg ${mine} does not know (${w.unknown.slice(0, 3).join(', ')}): run the release that wrote them`,
    };
  const pending = manifest
    .slice(0, i)
    .flatMap((r) => [...r.expand, ...r.contract])
    .concat(manifest[i]!.expand)
    .filter((m) => !state.applied.has(m));
  if (pending.length > 0) return { ok: false, reason: `not at this code's schema (pending: ${pending.join(', ')}); run: cyborg db migrate` };
  return { ok: true, run: [] };
}

/**
 * What `cyborg db migrate` of `mine` runs: on an empty database every migration (a new install,
 * no older role to spare); else this release's expand, and only from the previous release with
 * its contract done — a database further behind, or ahead, is refused naming the way out.
 */
export function migratePlan(state: SchemaState, manifest: readonly ReleaseMigrations[] = MIGRATIONS, mine = RELEASE): Verdict {
  const i = index(manifest, mine);
  const all = manifest.slice(0, i + 1).flatMap((r) => [...r.expand, ...r.contract]);
  if (state.applied.size === 0 && state.releases.length === 0) return { ok: true, run: all };
  const w = where(state, manifest, mine);
  if (w.ahead.length > 0 || w.unknown.length > 0)
    return {
      ok: false,
      reason: `the database is at cyborg ${w.at ?? 'a newer release'}'s schema, newer than this ${mine}: nothing to migrate; run that release's cyborg`,
    };
  const prev = manifest[i - 1];
  const behind = manifest
    .slice(0, i - 1)
    .flatMap((r) => [...r.expand, ...r.contract])
    .filter((m) => !state.applied.has(m));
  if (prev && (behind.length > 0 || !prev.expand.every((m) => state.applied.has(m)))) {
    const atText = w.at ? `cyborg ${w.at}'s schema` : `a schema older than any release's (applied: ${[...state.applied].slice(0, 3).join(', ') || 'none'})`;
    return {
      ok: false,
      reason: `the database is at ${atText}: cyborg ${mine} migrates only from ${prev.release}, the release before it; first run ${prev.release}'s cyborg db migrate${prev.contract.length ? ' and db contract' : ''}`,
    };
  }
  if (prev && prev.contract.some((m) => !state.applied.has(m)))
    return {
      ok: false,
      reason: `cyborg ${prev.release}'s contract has not run: run ${prev.release}'s cyborg db contract first (with every role at ${prev.release})`,
    };
  return { ok: true, run: manifest[i]!.expand.filter((m) => !state.applied.has(m)) };
}

/** What `cyborg db contract` runs: this release's contract, once its expand has run. */
export function contractPlan(state: SchemaState, manifest: readonly ReleaseMigrations[] = MIGRATIONS, mine = RELEASE): Verdict {
  const i = index(manifest, mine);
  const start = startVerdict(state, manifest, mine);
  if (!start.ok) return start;
  const missing = manifest[i]!.expand.filter((m) => !state.applied.has(m));
  if (missing.length) return { ok: false, reason: `cyborg ${mine}'s expand has not run (${missing.join(', ')}): run cyborg db migrate first` };
  return { ok: true, run: manifest[i]!.contract.filter((m) => !state.applied.has(m)) };
}

/** Expand and contract migrations of `mine` the database has not run (upgrade-check). */
export function pendingOf(state: SchemaState, manifest: readonly ReleaseMigrations[] = MIGRATIONS, mine = RELEASE): { expand: string[]; contract: string[] } {
  const r = manifest[index(manifest, mine)]!;
  return { expand: r.expand.filter((m) => !state.applied.has(m)), contract: r.contract.filter((m) => !state.applied.has(m)) };
}
