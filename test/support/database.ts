import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate, openOrm } from '../../db/config.js';
import { PgJournal } from '../../db/pg-journal.js';
import { svc } from '../services.js';
import { quietLogger } from './log.js';

/** The URL of `db` on the test server (DATABASE_URL's server, another database name). */
export function urlFor(db: string, base = svc.postgres ?? 'postgres://postgres@127.0.0.1:5432/test'): string {
  const u = new URL(base);
  u.pathname = `/${db}`;
  return u.toString();
}

/**
 * Creates a fresh database with a unique name (one per test file or story), migrated as
 * `cyborg db migrate` leaves it (roles refuse a database that is not); `migrated: false` leaves
 * it empty. Returns its URL and a dropper.
 */
export async function freshDatabase(prefix: string, opts: { migrated?: boolean } = {}): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const name = `cyborg_${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: svc.postgres! });
  await admin.connect();
  await admin.query(`create database "${name}"`);
  await admin.end();
  if (opts.migrated !== false) {
    const orm = await openOrm({ url: urlFor(name), pool: 1 });
    try {
      await migrate(orm);
    } finally {
      await orm.close();
    }
  }
  return {
    name,
    url: urlFor(name),
    drop: async () => {
      const c = new pg.Client({ connectionString: svc.postgres! });
      await c.connect();
      await c.query(`drop database if exists "${name}" with (force)`);
      await c.end();
    },
  };
}

/** A migrated journal on `url`. */
export async function openTestJournal(
  url: string,
  opts: { unavailableAfterMs?: number; maxBatch?: number; pool?: number; closeTimeoutMs?: number } = {},
): Promise<PgJournal> {
  const orm = await openOrm({ url, pool: opts.pool ?? 2 });
  await migrate(orm);
  return new PgJournal({
    orm,
    log: quietLogger(),
    unavailableAfterMs: opts.unavailableAfterMs ?? 10_000,
    maxBatch: opts.maxBatch ?? 5_000,
    retryMinMs: 20,
    retryMaxMs: 200,
    ...(opts.closeTimeoutMs !== undefined ? { closeTimeoutMs: opts.closeTimeoutMs } : {}),
  });
}

/** Runs one query on its own connection. */
export async function query<T extends pg.QueryResultRow = pg.QueryResultRow>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text, params)).rows;
  } finally {
    await c.end();
  }
}
