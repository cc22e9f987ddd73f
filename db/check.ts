import type { MikroORM } from '@mikro-orm/postgresql';
import { StartupError, StartupExit } from '../config/index.js';
import { startVerdict } from './releases.js';
import { schemaState } from './schema-status.js';

/** Where the URL came from, as the operator wrote it (the file's option, its variable). */
const OPTION = '[database] connection (DATABASE_URL)';

/** A URL fit for a log line: no password. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://…';
  }
}

/**
 * Refuses to run on a database this code did not migrate: one that does not exist (a misspelt
 * name must not be created and run on empty), one behind the code's schema or too far ahead of
 * it, one that cannot be reached or refuses the user. Only `cyborg db migrate` creates and
 * migrates; this changes nothing.
 */
export async function requireMigrated(orm: MikroORM, url: string): Promise<void> {
  const at = `${OPTION} = ${redact(url)}`;
  let verdict: ReturnType<typeof startVerdict>;
  try {
    verdict = startVerdict(await schemaState(orm));
  } catch (err) {
    throw startupErrorFor(err, at);
  }
  // At this release's schema, or one release ahead in expand only (db/releases.ts); else one line.
  if (!verdict.ok) throw new StartupError(`${at}: ${verdict.reason}`, StartupExit.schema);
}

/** A failed connection or query as one line naming the option and what to do. */
export function startupErrorFor(err: unknown, at: string): StartupError {
  const e = err as { code?: string; message?: string };
  const why = (e.message ?? String(err)).split('\n')[0];
  if (e.code === '3D000') return new StartupError(`${at}: ${why}; create and migrate it with: cyborg db migrate --create`, StartupExit.schema);
  // 28000 no such role / not allowed by pg_hba, 28P01 wrong password.
  if (e.code === '28000' || e.code === '28P01') return new StartupError(`${at}: the server refuses the user (${why})`, StartupExit.database);
  return new StartupError(`${at}: cannot reach the database (${why})`, StartupExit.database);
}

/** The database a PostgreSQL URL names (its path). */
export function databaseName(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || 'postgres';
  } catch {
    return '?';
  }
}

/** True when the server answers but the database does not exist (3D000); other failures as startupErrorFor's line. */
export async function databaseMissing(orm: MikroORM, at: string): Promise<boolean> {
  try {
    await orm.em.getConnection().execute('select 1');
    return false;
  } catch (err) {
    if ((err as { code?: string }).code === '3D000') return true;
    throw startupErrorFor(err, at);
  }
}

/** `--create` refused by the server: the user may not create databases (42501), one line saying what to do. */
export function createErrorFor(err: unknown, at: string, name: string): StartupError {
  const e = err as { code?: string; message?: string };
  if (e.code !== '42501') return startupErrorFor(err, at);
  const why = (e.message ?? String(err)).split('\n')[0];
  return new StartupError(
    `${at}: --create: the user may not create database "${name}" (${why}); have a superuser run CREATE DATABASE, then cyborg db migrate`,
    StartupExit.database,
  );
}
