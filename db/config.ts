import { fileURLToPath } from 'node:url';
import { defineConfig, MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import type { Pool } from 'pg';
import { guardPool } from './pool-guard.js';
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

/** The MikroORM options for Cyborg's schema at `url`. */
export function ormConfig(opts: OrmOptions): Options {
  return defineConfig({
    clientUrl: opts.url,
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
    migrations: {
      path: migrationsDir,
      pathTs: migrationsDir,
      glob: '!(*.d).{js,ts}',
      tableName: 'mikro_orm_migrations',
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

/** Applies every pending migration; returns the names applied. */
export async function migrate(orm: MikroORM): Promise<string[]> {
  const done = await orm.migrator.up();
  return done.map((m) => m.name);
}
