import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';

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

/** The host a dump's Cyborg agent reported (make-dumps.sh names each dump's host after it). */
export function hostOf(dump: string): string {
  return `adopt-${dump.replace(/\.sql$/, '')}`;
}

/** A Cyborg database of our own loaded from `dump`; its SQLAlchemy URL and a dropper. */
export async function loadDump(dump: string): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
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
