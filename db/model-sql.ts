import { sql, type Kysely } from 'kysely';
import { jsonbCol, rowsFrom, textCol } from './columns.js';
import type { MergedBatch } from './merge.js';
import type { DB } from './kysely-schema.js';

/**
 * The parts of the model that every agent registration touches — its host row, its drivers and
 * the conductor's driver documents — written by one bind-array statement each, whatever the
 * number of hosts in the flush.
 *
 * Why not the unit of work: it loads each row first and flushes entity by entity. A fleet's cold
 * start (thousands of agents registering, hundreds per flush) would spend the conductor's time
 * in `em.find` / `findOne` per document and change-set computation, while these rows are plain
 * upserts keyed by name. Device profiles stay with the unit of work (model-writer.ts): they are
 * few and written by operators.
 */
type Db = Kysely<DB>;

/** Upserts the hosts' rows, then makes each host's driver rows exactly the reported set. */
export async function writeHostRows(db: Db, m: MergedBatch): Promise<void> {
  if (m.hosts.size === 0) return;
  const h = { name: [] as string[], state: [] as string[], ctx: [] as unknown[], agent: [] as (string | null)[] };
  const d = { host: [] as string[], name: [] as string[], version: [] as string[] };
  for (const [name, change] of m.hosts) {
    h.name.push(name);
    h.state.push(change.record.value);
    h.ctx.push(change.record.context);
    h.agent.push((change.record.context.agentId as string | null | undefined) ?? null);
    for (const drv of change.drivers) {
      d.host.push(name);
      d.name.push(drv.name);
      d.version.push(drv.version);
    }
  }
  // One statement: the drivers' foreign key to their host is checked at its end, after the upsert.
  // The driver delete and upsert touch disjoint rows (gone vs reported).
  await sql`
    with h as (
      insert into hosts (name, state, context, agent_id, created_at, updated_at)
      select x.name, x.state, x.ctx, x.agent, now(), now()
        from ${rowsFrom(textCol(h.name), textCol(h.state), jsonbCol(h.ctx), textCol(h.agent))} as x(name, state, ctx, agent)
      on conflict (name) do update
        set state = excluded.state, context = excluded.context, agent_id = excluded.agent_id, updated_at = excluded.updated_at
    ), wanted as (
      select * from ${rowsFrom(textCol(d.host), textCol(d.name), textCol(d.version))} as x(host, name, version)
    ), gone as (
      delete from drivers dr
       where dr.host = any(${h.name}::text[])
         and not exists (select 1 from wanted w where w.host = dr.host and w.name = dr.name)
    )
    insert into drivers (host, name, version, state, created_at, updated_at)
    select host, name, version, 'installed', now(), now() from wanted
    on conflict (host, name) do update
      set version = excluded.version, updated_at = excluded.updated_at
      where drivers.version is distinct from excluded.version`.execute(db);
}

/** Upserts / deletes the generic documents of the flush (device profiles are not among them). */
export async function writeDocumentRows(db: Db, m: MergedBatch): Promise<void> {
  const up = { collection: [] as string[], id: [] as string[], body: [] as unknown[] };
  const gone = { collection: [] as string[], id: [] as string[] };
  for (const doc of m.documents.values()) {
    if (doc.collection === 'device_profiles') continue;
    if (doc.body === null) {
      gone.collection.push(doc.collection);
      gone.id.push(doc.id);
      continue;
    }
    up.collection.push(doc.collection);
    up.id.push(doc.id);
    up.body.push(doc.body);
  }
  if (up.id.length > 0) {
    await sql`
      insert into documents (collection, id, body, created_at, updated_at)
      select x.collection, x.id, x.body, now(), now()
        from ${rowsFrom(textCol(up.collection), textCol(up.id), jsonbCol(up.body))} as x(collection, id, body)
      on conflict (collection, id) do update set body = excluded.body, updated_at = excluded.updated_at`.execute(db);
  }
  if (gone.id.length > 0) {
    await sql`
      delete from documents d
       using unnest(${gone.collection}::text[], ${gone.id}::text[]) as x(collection, id)
       where d.collection = x.collection and d.id = x.id`.execute(db);
  }
}
