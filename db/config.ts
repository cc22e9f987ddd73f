import { fileURLToPath } from 'node:url';
import { defineConfig, MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import type { Pool } from 'pg';
import { guardPool } from './pool-guard.js';
import { contractPlan, migratePlan } from './releases.js';
import { OLD_HISTORY, schemaState } from './schema-status.js';
import { AttachHandle, Attribute, ControlpathId, Deployable, Device } from './entities/inventory.js';
import { Accelerator, DeviceProfile, Document, Driver, ExtendedAcceleratorRequest, Host, TransitionLog } from './entities/state.js';

/** Every entity, in one list (the ORM, the migration generator and the tests use it). */
export const entities = [
  Device,
  ControlpathId,
  Deployable,
  Attribute,
  AttachHandle,
  Host,
  Driver,
  Accelerator,
  DeviceProfile,
  ExtendedAcceleratorRequest,
  TransitionLog,
  Document,
];

const migrationsDir = fileURLToPath(new URL('./migrations', import.meta.url));

export interface OrmOptions {
  /** postgres://… (the machine's server, or the embedded PGlite socket). */
  url: string;
  /** Connections in the pool; the embedded database serves one. */
  pool?: number;
  debug?: boolean;
}

/**
 * The host a PostgreSQL URL names, without the brackets of an IPv6 literal: WHATWG's URL keeps
 * them in `hostname` (`[::1]`), and the ORM hands that to the resolver as a name (`getaddrinfo
 * ENOTFOUND [::1]`). Given to the ORM as `host`, which it takes before the URL's.
 *
 * @example hostOf('postgresql://cyborg@[::1]:5432/cyborg') // '::1'
 */
export function hostOf(url: string): string | undefined {
  try {
    const host = decodeURIComponent(new URL(url).hostname);
    return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host || undefined;
  } catch {
    return undefined;
  }
}

/** The MikroORM options for Cyborg's schema at `url`. */
export function ormConfig(opts: OrmOptions): Options {
  const host = hostOf(opts.url);
  return defineConfig({
    clientUrl: opts.url,
    ...(host ? { host } : {}),
    entities,
    extensions: [Migrator],
    pool: { min: 0, max: opts.pool ?? 4 },
    // Every pool is guarded from the start: a connection that dies mid-transaction is released.
    // keepAlive + a connect timeout turn a silently vanished server into errors the journal retries.
    driverOptions: {
      onPoolCreated: (pool: Pool) => guardPool(pool),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: 10_000,
    },
    debug: opts.debug ?? false,
    // Never create a database on connect: a misspelt name would be created and run on empty.
    // Only the migrator (`cyborg db migrate`) creates one.
    ensureDatabase: false,
    // Entities are defined with defineEntity: nothing to discover from files or reflect.
    discovery: { warnWhenNoEntities: true },
    // The releases' phases and 0.1.0's migration history are the migrations' own tables, not entities.
    schemaGenerator: { skipTables: ['cyborg_schema_release', 'mikro_orm_migrations'] },
    migrations: {
      path: migrationsDir,
      pathTs: migrationsDir,
      glob: '!(*.d).{js,ts}',
      // 0.1.0's history was `mikro_orm_migrations`: copied here by `db migrate`, dropped by `db contract` (db/releases.ts).
      tableName: 'cyborg_migrations',
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
  });
}

/** Connects the ORM (no schema change). */
export function openOrm(opts: OrmOptions): Promise<MikroORM> {
  return MikroORM.init(ormConfig(opts));
}

/** A migration refused: the database is not where this release's `db migrate` / `db contract` may start. */
export class MigrationRefused extends Error {
  override name = 'MigrationRefused';
}

/**
 * `cyborg db migrate`: this release's expand (every migration on an empty database), only from
 * the release before it (db/releases.ts); returns the names applied. 0.1.0's history is copied
 * into this release's table first, and left where it was: a 0.1.0 role started again before
 * contract (a rollback) still finds it.
 */
export async function migrate(orm: MikroORM): Promise<string[]> {
  const plan = migratePlan(await schemaState(orm));
  if (!plan.ok) throw new MigrationRefused(plan.reason);
  return run(orm, plan.run);
}

/** `cyborg db contract`: this release's contract migrations; the caller has checked that no older role is alive. */
export async function contract(orm: MikroORM): Promise<string[]> {
  const plan = contractPlan(await schemaState(orm));
  if (!plan.ok) throw new MigrationRefused(plan.reason);
  return run(orm, plan.run);
}

async function run(orm: MikroORM, names: string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const [row] = await orm.em.getConnection().execute<{ old: string | null }[]>(`select to_regclass('${OLD_HISTORY}')::text as old`);
  if (row?.old) {
    const have = new Set((await orm.migrator.getExecuted()).map((m) => m.name.replace(/\.(js|ts)$/, '')));
    for (const r of await orm.em.getConnection().execute<{ name: string }[]>(`select name from "${OLD_HISTORY}" order by id`))
      if (!have.has(r.name)) await orm.migrator.logMigration(r.name);
  }
  const done = await orm.migrator.up({ migrations: names });
  return done.map((m) => m.name);
}
