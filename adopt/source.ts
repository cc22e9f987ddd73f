import type { Connection as MysqlConnection } from 'mysql2/promise';
import pg from 'pg';
import { AdoptError, AdoptExit } from './errors.js';

/** A plain row as either server gives it: column name to value (dates as text, booleans as 0/1 or true/false). */
export type Row = Record<string, unknown>;

/**
 * One read-only, consistent view of a Cyborg database. Every query runs inside one transaction
 * the server itself holds read only (MySQL's `START TRANSACTION WITH CONSISTENT SNAPSHOT, READ
 * ONLY`, PostgreSQL's `REPEATABLE READ READ ONLY`): the source cannot be written, even by a bug
 * of ours, and all tables are read as of one instant while Cyborg may still be running.
 */
export interface Source {
  /** How the source is named in messages: the URL with its password masked. */
  readonly name: string;
  readonly dialect: 'mysql' | 'postgresql';
  tables(): Promise<Set<string>>;
  columns(table: string): Promise<Set<string>>;
  select(sql: string): Promise<Row[]>;
  close(): Promise<void>;
}

/** The URL with its password masked, as every message names it. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(not a URL)';
  }
}

/**
 * Opens `url`: SQLAlchemy's `mysql+pymysql://` (what Cyborg's `[database] connection` says),
 * `mysql://`, `mariadb://`, or `postgresql[+psycopg2]://` / `postgres://`.
 */
export async function openSource(url: string, timeoutMs = 10_000): Promise<Source> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new AdoptError(`--from: not a database URL (mysql+pymysql://user:password@host/cyborg or postgresql://…)`, AdoptExit.config);
  }
  const scheme = u.protocol.replace(/:$/, '').split('+')[0]!;
  const name = maskUrl(url);
  if (scheme === 'mysql' || scheme === 'mariadb') return openMysql(u, name, timeoutMs);
  if (scheme === 'postgresql' || scheme === 'postgres') return openPostgres(u, name, timeoutMs);
  throw new AdoptError(`--from ${name}: unknown scheme ${scheme}: (mysql+pymysql://, mysql://, postgresql://)`, AdoptExit.config);
}

async function openMysql(u: URL, name: string, timeoutMs: number): Promise<Source> {
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!database) throw new AdoptError(`--from ${name}: no database named in the URL`, AdoptExit.config);
  let conn: MysqlConnection;
  try {
    // Imported here, not at the top: every role's program (cli/main.ts) reaches this file through
    // `cyborg adopt`, and mysql2 is ~4 MiB of heap the all-in-one never uses (issue 43).
    const mysql = (await import('mysql2/promise')).default;
    conn = await mysql.createConnection({
      host: u.hostname || '127.0.0.1',
      port: u.port ? Number(u.port) : 3306,
      user: decodeURIComponent(u.username || 'root'),
      password: decodeURIComponent(u.password),
      database,
      connectTimeout: timeoutMs,
      // Cyborg's DATETIME columns are UTC without a zone: read them as the text they are.
      dateStrings: true,
      supportBigNumbers: true,
    });
    await conn.query('SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
  } catch (err) {
    throw sourceError(err, name);
  }
  const rows = async (sql: string, params: unknown[] = []): Promise<Row[]> => {
    try {
      const [r] = await conn.query(sql, params);
      return r as Row[];
    } catch (err) {
      throw sourceError(err, name);
    }
  };
  return {
    name,
    dialect: 'mysql',
    tables: async () => new Set((await rows('SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE()')).map((r) => String(r.t))),
    columns: async (table) =>
      new Set(
        (await rows('SELECT column_name AS c FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?', [table])).map((r) =>
          String(r.c),
        ),
      ),
    select: (sql) => rows(sql),
    close: async () => {
      await conn.query('ROLLBACK').catch(() => undefined);
      await conn.end().catch(() => undefined);
    },
  };
}

async function openPostgres(u: URL, name: string, timeoutMs: number): Promise<Source> {
  const plain = new URL(u.toString());
  plain.protocol = 'postgresql:';
  const client = new pg.Client({
    connectionString: plain.toString(),
    connectionTimeoutMillis: timeoutMs,
    // timestamp without time zone (1114) as its text, as MySQL's DATETIME is read.
    types: { getTypeParser: (oid: number, format?: string) => (oid === 1114 ? (v: string) => v : pg.types.getTypeParser(oid, format as 'text')) },
  });
  try {
    await client.connect();
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  } catch (err) {
    await client.end().catch(() => undefined);
    throw sourceError(err, name);
  }
  const rows = async (sql: string, params: unknown[] = []): Promise<Row[]> => {
    try {
      return (await client.query(sql, params)).rows as Row[];
    } catch (err) {
      throw sourceError(err, name);
    }
  };
  return {
    name,
    dialect: 'postgresql',
    tables: async () =>
      new Set((await rows('SELECT table_name AS t FROM information_schema.tables WHERE table_schema = current_schema()')).map((r) => String(r.t))),
    columns: async (table) =>
      new Set(
        (await rows('SELECT column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1', [table])).map((r) =>
          String(r.c),
        ),
      ),
    select: (sql) => rows(sql),
    close: async () => {
      await client.query('ROLLBACK').catch(() => undefined);
      await client.end().catch(() => undefined);
    },
  };
}

/** A driver's failure as one line naming the source: unreachable and refused credentials exit 4, a missing database 7. */
function sourceError(err: unknown, name: string): AdoptError {
  const e = err as { code?: string; errno?: number; message?: string };
  const code = e.code ?? '';
  if (['ER_ACCESS_DENIED_ERROR', 'ER_DBACCESS_DENIED_ERROR', '28P01', '28000'].includes(code))
    return new AdoptError(`--from ${name}: the source database refuses the user (${code}): check the user and password`, AdoptExit.unreachable);
  if (
    ['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET', 'EAI_AGAIN', 'PROTOCOL_CONNECTION_LOST'].includes(code) ||
    /timeout/i.test(e.message ?? '')
  )
    return new AdoptError(`--from ${name}: the source database cannot be reached (${code || e.message})`, AdoptExit.unreachable);
  if (code === 'ER_BAD_DB_ERROR' || code === '3D000')
    return new AdoptError(`--from ${name}: no such database on the source server: not a Cyborg database`, AdoptExit.notAdoptable);
  return new AdoptError(`--from ${name}: the source database failed: ${e.message ?? String(err)}`, AdoptExit.unreachable);
}
