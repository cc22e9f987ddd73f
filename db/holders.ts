import { sql, type Kysely } from 'kysely';
import type { DB } from './kysely-schema.js';

/**
 * The host the database records each of `ids` on, whichever table holds it: a device, a
 * deployable (and its accelerator) or an attach handle — each unique across the fleet. What the
 * report door asks before it believes an inventory, since with several conductors none holds
 * every host in memory. Ids the database does not know are absent from the answer.
 */
export async function recordedHolders(db: Kysely<DB>, ids: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (ids.length === 0) return out;
  const list = sql`${[...new Set(ids)]}::text[]`;
  const { rows } = await sql<{ id: string; host: string }>`
    select d.uuid as id, d.hostname as host from devices d where d.uuid = any(${list})
    union all
    select a.id, a.host from accelerators a where a.id = any(${list})
    union all
    select dp.uuid, d.hostname from deployables dp join devices d on d.id = dp.device_id where dp.uuid = any(${list})
    union all
    select h.uuid, d.hostname from attach_handles h join deployables dp on dp.id = h.deployable_id join devices d on d.id = dp.device_id
     where h.uuid = any(${list})`.execute(db);
  for (const r of rows) out.set(r.id, r.host);
  return out;
}
