import { sql, type Kysely } from 'kysely';
import type { DeviceT } from '../bus/schemas.js';
import { stableId, uuid3, NAMESPACE_DNS } from '../drivers/ids.js';

/**
 * Hosts' first inventories (no rows yet), all the hosts of a flush together, written by ONE
 * statement: a data-modifying CTE per table (devices, control-path ids, deployables, attributes,
 * attach handles), each `INSERT … SELECT FROM unnest($arrays)`, the children finding their
 * parents' new ids by uuid inside the statement.
 *
 * Why not the unit of work, nor MikroORM's `insertMany`: a fleet's cold start brings hundreds of
 * hosts per flush, and bench:fleet (10,000 hosts) spent a fifth of the conductor's CPU building
 * multi-row INSERTs and entities for them — and each table cost a round trip to draw its ids first.
 * One statement with bind arrays costs one round trip and almost no JavaScript per row. A host
 * that arrives with 10,000 deployables (~51,000 rows) is one statement too. Later reports are
 * diffed through the unit of work (inventory-diff.ts), where changes are few.
 */
export async function insertInventories(db: Kysely<object>, reports: { host: string; devices: DeviceT[] }[]): Promise<void> {
  const dev = { uuid: [] as string[], type: [] as string[], vendor: [] as string[], model: [] as string[], std: [] as string[], vstd: [] as string[],
    host: [] as string[], driver: [] as string[], pos: [] as number[] };
  const cp = { uuid: [] as string[], dev: [] as string[], info: [] as string[] };
  const dep = { uuid: [] as string[], name: [] as string[], num: [] as number[], dev: [] as string[], rp: [] as string[], driver: [] as (string | null)[], pos: [] as number[] };
  const attr = { uuid: [] as string[], dep: [] as string[], key: [] as string[], value: [] as string[], pos: [] as number[] };
  const ah = { uuid: [] as string[], dep: [] as string[], cp: [] as string[], inUse: [] as boolean[], type: [] as string[], info: [] as string[], pos: [] as number[] };
  for (const { host, devices } of reports) {
    let position = 0;
    for (const d of devices) {
      if (d.stub) continue;
      const cpid = stableId(host, 'cpid', d.controlPath.info);
      dev.uuid.push(d.uuid); dev.type.push(d.type); dev.vendor.push(d.vendor); dev.model.push(d.model); dev.std.push(d.stdBoardInfo);
      dev.vstd.push(d.vendorBoardInfo); dev.host.push(host); dev.driver.push(d.driver); dev.pos.push(position++);
      cp.uuid.push(cpid); cp.dev.push(d.uuid); cp.info.push(d.controlPath.info);
      d.deployables.forEach((x, i) => {
        dep.uuid.push(x.uuid); dep.name.push(x.name); dep.num.push(x.numAccelerators); dep.dev.push(d.uuid);
        dep.rp.push(uuid3(NAMESPACE_DNS, x.name)); dep.driver.push(x.driverName ?? null); dep.pos.push(i);
        x.attributes.forEach((a, j) => {
          attr.uuid.push(stableId(x.uuid, 'attr', a.key)); attr.dep.push(x.uuid); attr.key.push(a.key); attr.value.push(a.value); attr.pos.push(j);
        });
        x.attachHandles.forEach((h, j) => {
          ah.uuid.push(h.uuid); ah.dep.push(x.uuid); ah.cp.push(cpid); ah.inUse.push(h.inUse); ah.type.push(h.attachType); ah.info.push(h.attachInfo); ah.pos.push(j);
        });
      });
    }
  }
  if (dev.uuid.length === 0) return;
  await sql`
    with dev as (
      insert into devices (uuid, type, vendor, model, std_board_info, vendor_board_info, hostname, status, driver, stub, position, created_at, updated_at)
      select x.uuid, x.type, x.vendor, x.model, x.std, x.vstd, x.host, 'enabled', x.driver, false, x.pos, now(), now()
        from unnest(${dev.uuid}::text[], ${dev.type}::text[], ${dev.vendor}::text[], ${dev.model}::text[], ${dev.std}::text[], ${dev.vstd}::text[],
                    ${dev.host}::text[], ${dev.driver}::text[], ${dev.pos}::int[]) as x(uuid, type, vendor, model, std, vstd, host, driver, pos)
      returning id, uuid
    ), cp as (
      insert into controlpath_ids (uuid, device_id, cpid_type, cpid_info, created_at, updated_at)
      select x.uuid, dev.id, 'PCI', x.info, now(), now()
        from unnest(${cp.uuid}::text[], ${cp.dev}::text[], ${cp.info}::text[]) as x(uuid, dev, info) join dev on dev.uuid = x.dev
      returning id, uuid
    ), dep as (
      insert into deployables (uuid, name, num_accelerators, device_id, rp_uuid, driver_name, position, created_at, updated_at)
      select x.uuid, x.name, x.num, dev.id, x.rp, x.driver, x.pos, now(), now()
        from unnest(${dep.uuid}::text[], ${dep.name}::text[], ${dep.num}::int[], ${dep.dev}::text[], ${dep.rp}::text[], ${dep.driver}::text[], ${dep.pos}::int[])
             as x(uuid, name, num, dev, rp, driver, pos) join dev on dev.uuid = x.dev
      returning id, uuid
    ), attr as (
      insert into attributes (uuid, deployable_id, key, value, position, created_at, updated_at)
      select x.uuid, dep.id, x.key, x.value, x.pos, now(), now()
        from unnest(${attr.uuid}::text[], ${attr.dep}::text[], ${attr.key}::text[], ${attr.value}::text[], ${attr.pos}::int[])
             as x(uuid, dep, key, value, pos) join dep on dep.uuid = x.dep
    ), ah as (
      insert into attach_handles (uuid, deployable_id, cpid_id, in_use, attach_type, attach_info, position, created_at, updated_at)
      select x.uuid, dep.id, cp.id, x.in_use, x.type, x.info, x.pos, now(), now()
        from unnest(${ah.uuid}::text[], ${ah.dep}::text[], ${ah.cp}::text[], ${ah.inUse}::boolean[], ${ah.type}::text[], ${ah.info}::text[], ${ah.pos}::int[])
             as x(uuid, dep, cp, in_use, type, info, pos) join dep on dep.uuid = x.dep join cp on cp.uuid = x.cp
    )
    select 1`.execute(db);
}
