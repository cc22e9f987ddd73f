import { createHash } from 'node:crypto';
import { sql, type CompiledQuery, type Kysely, type RawBuilder } from 'kysely';
import type { Pool, QueryConfig } from 'pg';
import { jsonbCol, rowsFrom, textCol } from './columns.js';
import type { MergedBatch } from './merge.js';
import { cyborgState, type ArqView } from '../model/index.js';
import type { DB } from './kysely-schema.js';

/**
 * The hot path of a flush: accelerator records, ARQ records and transition-log rows, each kind
 * written by ONE statement whatever the batch size — `INSERT … SELECT FROM ROWS FROM($columns) ON
 * CONFLICT DO UPDATE` and a multi-row INSERT — with real bind parameters through the ORM's own
 * Kysely: inside the flush's transaction when it also writes the model, else all of them as one
 * statement of data-modifying CTEs (atomic by itself, one round trip).
 *
 * Why not the unit of work here: `em.flush()` of changed entities has to load (or merge) each
 * entity first and writes them one by one, while one `unnest` statement writes the whole batch,
 * an order of magnitude faster, with no read. A transition costs one accelerator row and one
 * audit row, so the unit of work would cap transitions per second before any other work. The
 * model (hosts, drivers, inventory, device profiles, documents) changes rarely and keeps the unit
 * of work (model-writer.ts).
 */
type Db = Kysely<DB>;

type Stmt = RawBuilder<unknown>;

/** Upserts the coalesced accelerator records (columns as JSON arrays: see columns.ts for why). */
function acceleratorUpsert(m: MergedBatch): Stmt | null {
  if (m.accelerators.size === 0) return null;
  const ids: string[] = [],
    hosts: string[] = [],
    states: string[] = [],
    contexts: unknown[] = [];
  for (const [id, a] of m.accelerators) {
    ids.push(id);
    hosts.push(a.host);
    states.push(a.record.value);
    contexts.push(a.record.context);
  }
  return sql`
    insert into accelerators (id, host, state, context, created_at, updated_at)
    select x.id, x.host, x.state, x.context, now(), now()
      from ${rowsFrom(textCol(ids), textCol(hosts), textCol(states), jsonbCol(contexts))} as x(id, host, state, context)
    on conflict (id) do update
      set host = excluded.host, state = excluded.state, context = excluded.context, updated_at = excluded.updated_at`;
}

/**
 * Appends every transition of the batch, in commit order: the records go as they are, one JSON
 * array (see columns.ts for why not ten text[]), and `with ordinality` + order by keeps the
 * serial order equal to the commit order. The last row carries the flush's stamp.
 */
function transitionInsert(m: MergedBatch): Stmt | null {
  if (m.transitions.length === 0) return null;
  return sql`
    insert into transition_log (kind, id, host, event, "from", "to", actor, project_id, actor_name, project_name, request_id, reason, args, at, flush)
    select kind, id, host, event, "from", "to", actor, project_id, actor_name, project_name, request_id, reason, args, at, case when n = ${m.transitions.length}::int then ${m.stamp ?? null}::text end
      from rows from (json_to_recordset(${JSON.stringify(m.transitions)}::json)
             as (kind text, id text, host text, event text, "from" text, "to" text, actor text, "projectId" text, "actorName" text, "projectName" text, "requestId" text, reason text, args jsonb, at timestamptz))
           with ordinality as x(kind, id, host, event, "from", "to", actor, project_id, actor_name, project_name, request_id, reason, args, at, n)
     order by n`;
}

/**
 * Upserts the coalesced ARQ records (Cyborg's columns derived from the machine's context, the
 * foreign keys resolved by uuid) and deletes the deleted ones. Every column goes as one JSON
 * array (columns.ts): besides sparing pg's escaping of text[] literals, a set-returning function
 * over JSON is estimated the same with or without its value, so PostgreSQL keeps one generic
 * plan for each named shape. Over `= any($n::text[])` or `unnest($n::text[])` it found the
 * custom plan cheaper at every execution and planned the statement again each time (0.16 ms a
 * cycle's delete on this VM).
 */
function arqStatements(m: MergedBatch): Stmt[] {
  if (m.arqs.size === 0) return [];
  const gone: string[] = [];
  const c = {
    uuid: [] as string[],
    project: [] as (string | null)[],
    state: [] as string[],
    machine: [] as string[],
    ctx: [] as unknown[],
    dpName: [] as string[],
    group: [] as (string | null)[],
    hostname: [] as (string | null)[],
    rp: [] as (string | null)[],
    instance: [] as (string | null)[],
    handle: [] as (string | null)[],
    deployable: [] as (string | null)[],
  };
  for (const [uuid, a] of m.arqs) {
    if (a.deleted) {
      gone.push(uuid);
      continue;
    }
    const ctx = a.record.context;
    c.uuid.push(uuid);
    c.project.push(ctx.projectId ?? null);
    c.state.push(cyborgState(a.record.value as ArqView['state']));
    c.machine.push(a.record.value);
    c.ctx.push(a.record.context);
    c.dpName.push(ctx.deviceProfileName);
    c.group.push(typeof ctx.deviceProfileGroupId === 'number' ? String(ctx.deviceProfileGroupId) : null);
    c.hostname.push(ctx.binding?.hostname ?? null);
    c.rp.push(ctx.binding?.deviceRpUuid ?? null);
    c.instance.push(ctx.binding?.instanceUuid ?? null);
    c.handle.push(ctx.boundTo?.handleUuid ?? null);
    c.deployable.push(ctx.boundTo?.acceleratorId ?? null);
  }
  const out: Stmt[] = [];
  if (c.uuid.length > 0) {
    const cols = rowsFrom(
      textCol(c.uuid),
      textCol(c.project),
      textCol(c.state),
      textCol(c.machine),
      jsonbCol(c.ctx),
      textCol(c.dpName),
      textCol(c.group),
      textCol(c.hostname),
      textCol(c.rp),
      textCol(c.instance),
      textCol(c.handle),
      textCol(c.deployable),
    );
    out.push(sql`
      insert into extended_accelerator_requests (uuid, project_id, state, machine_state, context, device_profile_id, device_profile_name,
        device_profile_group_id, hostname, device_rp_uuid, instance_uuid, attach_handle_id, deployable_id, created_at, updated_at)
      select x.uuid, x.project, x.state, x.machine, x.ctx, dp.id, x.dp_name, x.grp::int, x.hostname, x.rp, x.instance, ah.id, d.id, now(), now()
        from ${cols} as x(uuid, project, state, machine, ctx, dp_name, grp, hostname, rp, instance, handle, deployable)
        left join device_profiles dp on dp.name = x.dp_name
        left join attach_handles ah on ah.uuid = x.handle
        left join deployables d on d.uuid = x.deployable
      on conflict (uuid) do update set
        project_id = excluded.project_id, state = excluded.state, machine_state = excluded.machine_state, context = excluded.context,
        device_profile_id = excluded.device_profile_id, hostname = excluded.hostname, device_rp_uuid = excluded.device_rp_uuid,
        instance_uuid = excluded.instance_uuid, attach_handle_id = excluded.attach_handle_id, deployable_id = excluded.deployable_id,
        updated_at = excluded.updated_at`);
  }
  if (gone.length > 0) out.push(sql`delete from extended_accelerator_requests r using ${textCol(gone)} as g(uuid) where r.uuid = g.uuid`);
  return out;
}

function statements(m: MergedBatch): Stmt[] {
  return [acceleratorUpsert(m), ...arqStatements(m), transitionInsert(m)].filter((x): x is Stmt => x !== null);
}

/**
 * The whole hot path as ONE statement: each part a data-modifying CTE, and a single statement is
 * atomic on its own. Null when there is nothing to write. The pipelined flush (flight.ts) sends
 * it on a connection of its own, between its BEGIN and its COMMIT.
 */
export function hotPathStatement(m: MergedBatch): Stmt | null {
  const all = statements(m);
  if (all.length <= 1) return all[0] ?? null;
  const ctes = all.map((st, i) => sql`${sql.raw(`w${i}`)} as (${st})`);
  return sql`with ${sql.join(ctes, sql`, `)} select 1`;
}

/** How many statement shapes get a name: the hot path has a handful (which of its parts a batch holds). */
const MAX_SHAPES = 32;
const shapeNames = new Map<string, string>();

/**
 * A compiled hot-path statement as `pg` runs it, named when `prepared`: each pooled connection
 * then parses and plans a shape once and afterwards only binds and executes it. The batch size
 * is in the parameters (arrays, a JSON document), never in the text, so the shapes are few; on
 * this VM planning the unnamed statement cost more than running it (about 0.9 of 1.5 ms).
 */
export function pgQuery(query: CompiledQuery, prepared: boolean): QueryConfig {
  const config: QueryConfig = { text: query.sql, values: query.parameters as unknown[] };
  if (!prepared) return config;
  let name = shapeNames.get(query.sql);
  if (name === undefined && shapeNames.size < MAX_SHAPES) {
    name = `cyborg_hot_${createHash('sha1').update(query.sql).digest('hex').slice(0, 20)}`;
    shapeNames.set(query.sql, name);
  }
  return name === undefined ? config : { ...config, name };
}

/**
 * Runs the whole hot path as ONE statement on the pool, outside any explicit transaction (a
 * single statement is atomic): one round trip. Returns 1, or 0 when there is nothing to write.
 */
export async function writeHotPathOnPool(pool: Pool, db: Db, m: MergedBatch, prepared: boolean): Promise<number> {
  const st = hotPathStatement(m);
  if (!st) return 0;
  await pool.query(pgQuery(st.compile(db), prepared));
  return 1;
}

/**
 * Runs the whole hot path as ONE statement (`hotPathStatement`): alone, outside any explicit
 * transaction, a flush with no model change costs one round trip instead of four (BEGIN, upsert,
 * insert, COMMIT); inside a model flush's transaction it saves round trips too, each of which
 * waits on the conductor's busy event loop as well as on the database. Returns 1, or 0 when
 * there is nothing to write.
 */
export async function writeHotPath(db: Db, m: MergedBatch): Promise<number> {
  const st = hotPathStatement(m);
  if (!st) return 0;
  await st.execute(db);
  return 1;
}
