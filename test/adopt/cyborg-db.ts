import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { svc } from '../services.js';
import { urlFor } from '../support/database.js';

/** The committed dumps of real Cyborg databases (test/fixtures/cyborg-db/README.md). */
export const DUMP_DIR = join(import.meta.dirname, '..', 'fixtures', 'cyborg-db');
export const DUMPS = readdirSync(DUMP_DIR)
  .filter((f) => f.endsWith('.sql'))
  .sort();

/** MariaDB of these machines (MARIADB_URL; .ci/run starts it): where a dump becomes a Cyborg database again. */
export const MARIADB = process.env.MARIADB_URL ?? 'mysql://root@127.0.0.1:3306';

export const mariadbUp: boolean = await mysql
  .createConnection({ uri: MARIADB, connectTimeout: 2_000 })
  .then(async (c) => {
    await c.end();
    return true;
  })
  .catch(() => false);
if (!mariadbUp && process.env.CI === 'true') throw new Error(`MariaDB (${MARIADB}) is required in CI for the adoption stories`);

/** Which server a dump is for: `pg-*.sql` are pg_dumps of Cyborg on PostgreSQL, the rest mysqldumps. */
export function dialectOf(dump: string): 'mysql' | 'postgresql' {
  return dump.startsWith('pg-') ? 'postgresql' : 'mysql';
}

/** Why a dump's server cannot be had here (undefined: it can): the test is skipped saying so. */
export function dumpServerMissing(dump: string): string | undefined {
  if (dialectOf(dump) === 'postgresql') return svc.postgres ? undefined : 'PostgreSQL is not reachable (DATABASE_URL)';
  return mariadbUp ? undefined : `MariaDB (${MARIADB}) is not reachable`;
}

/** The host a dump's Cyborg agent reported (make-dumps.sh names each dump's host after it). */
export function hostOf(dump: string): string {
  return `adopt-${dump.replace(/\.sql$/, '')}`;
}

/** A Cyborg database loaded from a dump: its SQLAlchemy URL, its rows and checksum as its server reads them, a dropper. */
export interface LoadedDump {
  url: string;
  name: string;
  rows: (table: string) => Promise<Record<string, unknown>[]>;
  checksum: () => Promise<string>;
  drop: () => Promise<void>;
}

/** A Cyborg database of our own loaded from `dump`, on the server its dialect names. */
export async function loadDump(dump: string): Promise<LoadedDump> {
  return dialectOf(dump) === 'postgresql' ? loadPgDump(dump) : loadMysqlDump(dump);
}

async function loadMysqlDump(dump: string): Promise<LoadedDump> {
  const name = `cyborg_src_${randomBytes(4).toString('hex')}`;
  const c = await mysql.createConnection({ uri: MARIADB, multipleStatements: true });
  try {
    await c.query(`CREATE DATABASE ${name}`);
    await c.query(`USE ${name}`);
    await c.query(readFileSync(join(DUMP_DIR, dump), 'utf8'));
  } finally {
    await c.end();
  }
  const u = new URL(MARIADB);
  u.protocol = 'mysql+pymysql:';
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    rows: (table) => cyborgRows(name, table),
    checksum: () => checksum(name),
    drop: async () => {
      const d = await mysql.createConnection({ uri: MARIADB });
      await d.query(`DROP DATABASE IF EXISTS ${name}`);
      await d.end();
    },
  };
}

/** Every row of a Cyborg table of `db`, in id order (dates as text). */
export async function cyborgRows(db: string, table: string): Promise<Record<string, unknown>[]> {
  const c = await mysql.createConnection({ uri: MARIADB, database: db, dateStrings: true });
  try {
    const [rows] = await c.query(`SELECT * FROM \`${table}\` ORDER BY id`);
    return rows as Record<string, unknown>[];
  } finally {
    await c.end();
  }
}

/** A checksum of every table of `db`: what "the source was never written" is checked with. */
export async function checksum(db: string): Promise<string> {
  const c = await mysql.createConnection({ uri: MARIADB, database: db });
  try {
    const [tables] = await c.query('SHOW TABLES');
    const names = (tables as Record<string, string>[]).map((r) => Object.values(r)[0]!).sort();
    const [sums] = await c.query(`CHECKSUM TABLE ${names.map((n) => `\`${n}\``).join(', ')}`);
    return JSON.stringify(sums);
  } finally {
    await c.end();
  }
}

/** On the test PostgreSQL (as adopt_pg_src_*), named by Cyborg's own URL form (`postgresql+psycopg2://`). */
async function loadPgDump(dump: string): Promise<LoadedDump> {
  const name = `adopt_pg_src_${randomBytes(4).toString('hex')}`;
  const run = async <T>(url: string, f: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({
      connectionString: url,
      types: { getTypeParser: (oid: number, format?: string) => (oid === 1114 ? (v: string) => v : pg.types.getTypeParser(oid, format as 'text')) },
    });
    await c.connect();
    try {
      return await f(c);
    } finally {
      await c.end();
    }
  };
  const url = urlFor(name);
  await run(svc.postgres!, (c) => c.query(`create database "${name}"`));
  await run(url, (c) => c.query(readFileSync(join(DUMP_DIR, dump), 'utf8')));
  const u = new URL(url);
  u.protocol = 'postgresql+psycopg2:';
  return {
    url: u.toString(),
    name,
    rows: (table) => run(url, async (c) => (await c.query(`SELECT * FROM "${table}" ORDER BY id`)).rows as Record<string, unknown>[]),
    // Every row of every table, as text, in order: what "the source was never written" is checked with.
    checksum: () =>
      run(url, async (c) => {
        const tables = (await c.query("SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")).rows.map((r) =>
          String(r.t),
        );
        const sums = [];
        for (const t of tables)
          sums.push((await c.query(`SELECT '${t}' AS t, md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) AS s FROM "${t}" x`)).rows[0]);
        return JSON.stringify(sums);
      }),
    drop: () => run(svc.postgres!, (c) => c.query(`drop database if exists "${name}" with (force)`)).then(() => undefined),
  };
}
