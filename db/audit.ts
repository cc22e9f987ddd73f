import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { CyborgError } from '../errors/index.js';
import { decodeCursor, encodeCursor, type AuditEntry, type AuditPage, type AuditQuery } from '../model/index.js';
import type { DB, TransitionLogTable } from './kysely-schema.js';

/** A log row as the audit reads it: the schema's columns, with `args` as the journal writes it. */
type Row = Omit<Selectable<TransitionLogTable>, 'flush' | 'args'> & { args: Record<string, string | number | boolean> | null };

/** A time filter as a Date, or a 400 naming the field. */
function time(v: string | undefined, field: string): Date | undefined {
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  if (!Number.isFinite(t))
    throw new CyborgError('request.invalid', `${field} ${JSON.stringify(v)} is not a time (ISO 8601, e.g. 2026-11-23T10:00:00Z)`, { field });
  return new Date(t);
}

/**
 * One page of the audit log, newest first, by keyset on (at, seq): the next page starts strictly
 * before the last row's (at, seq), so rows appended meanwhile (newer) never shift a page and
 * none is skipped or repeated. The (host, at, seq) index serves one host over a time range and
 * (at, seq) the whole fleet; an accelerator's rows come through (id, seq). One row more than
 * `limit` is read to know whether a next page exists.
 */
export async function queryAudit(db: Kysely<DB>, q: AuditQuery): Promise<AuditPage> {
  const where: RawBuilder<unknown>[] = [];
  if (q.host !== undefined) where.push(sql`host = ${q.host}`);
  if (q.id !== undefined) where.push(sql`id = ${q.id}`);
  if (q.kind !== undefined) where.push(sql`kind = ${q.kind}`);
  // A user or project is named by its id or its name (rows written before names were kept have ids only).
  // Keystone's ids for a name match too: a row that kept only the id is found by the name typed.
  if (q.actor !== undefined) where.push(sql`(actor = ${q.actor} or actor_name = ${q.actor} or actor = any(${q.actorIds ?? []}::text[]))`);
  if (q.projectId !== undefined)
    where.push(sql`(project_id = ${q.projectId} or project_name = ${q.projectId} or project_id = any(${q.projectIds ?? []}::text[]))`);
  if (q.event !== undefined) where.push(sql`lower(event) = lower(${q.event})`);
  const since = time(q.since, 'since');
  const until = time(q.until, 'until');
  if (since) where.push(sql`at >= ${since}`);
  if (until) where.push(sql`at < ${until}`);
  if (q.cursor !== undefined) {
    const c = decodeCursor(q.cursor);
    if (!c) throw new CyborgError('request.invalid', 'cursor is not one this service gave: start again without it', { field: 'cursor' });
    where.push(sql`(at, seq) < (${new Date(c.at)}::timestamptz, ${c.seq}::bigint)`);
  }
  const filter = where.length > 0 ? sql`where ${sql.join(where, sql` and `)}` : sql``;
  const { rows } = await sql<Row>`
    select seq, kind, id, host, event, "from", "to", actor, project_id, actor_name, project_name, request_id, reason, args, at
      from transition_log ${filter}
     order by at desc, seq desc
     limit ${q.limit + 1}`.execute(db);
  const more = rows.length > q.limit;
  const entries = rows.slice(0, q.limit).map(entryOf);
  const last = entries.at(-1);
  return more && last ? { entries, next: encodeCursor(last.at, last.seq) } : { entries };
}

function entryOf(r: Row): AuditEntry {
  const e: AuditEntry = {
    seq: Number(r.seq),
    kind: r.kind as AuditEntry['kind'],
    id: r.id,
    event: r.event,
    from: r.from as AuditEntry['from'],
    to: r.to as AuditEntry['to'],
    at: (r.at instanceof Date ? r.at : new Date(r.at)).toISOString(),
  };
  if (r.host !== null) e.host = r.host;
  if (r.actor !== null) e.actor = r.actor;
  if (r.project_id !== null) e.projectId = r.project_id;
  if (r.actor_name !== null) e.actorName = r.actor_name;
  if (r.project_name !== null) e.projectName = r.project_name;
  if (r.request_id !== null) e.requestId = r.request_id;
  if (r.reason !== null) e.reason = r.reason;
  if (r.args !== null) e.args = r.args;
  return e;
}
