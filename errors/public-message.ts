import { isCyborgError } from './catalogue.js';

/** What a client or another process reads where a database's own words were. */
export const DATABASE_FAILED = 'the database could not store the change';

/**
 * A database driver's error (pg's DatabaseError, MikroORM's DriverException): its message is
 * PostgreSQL's own text — table, constraint and key names, values — for the log only.
 */
function fromDatabase(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as Record<string, unknown>;
  return typeof e.sqlState === 'string' || (typeof e.severity === 'string' && typeof e.routine === 'string');
}

// PostgreSQL's wording, as a last guard for text that reached a message through String(err).
const DATABASE_WORDS =
  /duplicate key value|violates (unique|foreign key|check|not-null|exclusion) constraint|\bSQLSTATE\b|^(insert into|update|delete from|select) .*\b(from|set|values)\b/i;

/**
 * The text of a failure fit to leave this process — a bus reply, a control reply, an HTTP body:
 * our own wording as thrown, never the database's (an agent or a client must not learn table,
 * constraint or key names from a refusal, nor another host's values). The log keeps the whole
 * error.
 *
 * @example publicMessage(uniqueViolation) // 'the database could not store the change'
 */
export function publicMessage(err: unknown): string {
  if (fromDatabase(err) || (!isCyborgError(err) && fromDatabase((err as { cause?: unknown } | null)?.cause))) return DATABASE_FAILED;
  const text = err instanceof Error ? err.message : String(err);
  return DATABASE_WORDS.test(text) ? DATABASE_FAILED : text;
}

/**
 * A refusal by the database for a change's data (SQLSTATE classes 22, 23, 54), in our words:
 * what kind of refusal it was, without the rows, keys or values it names.
 */
export function refusalText(sqlState: string | undefined): string {
  const cls = sqlState?.slice(0, 2);
  if (cls === '23') return 'the database refused the change: it conflicts with what is recorded';
  if (cls === '22') return 'the database refused the change: a value is out of its range or form';
  if (cls === '54') return 'the database refused the change: it exceeds a database limit';
  return 'the database refused the change';
}
