import { sql, type Kysely } from 'kysely';
import type { DeviceT } from '../bus/schemas.js';
import { stableId, uuid3, NAMESPACE_DNS } from '../drivers/ids.js';

/**
 * Hosts' first inventories (no rows yet), all the hosts of a flush together, in two round trips:
 * one draws the new rows' ids from the three parent tables' sequences, one writes the five tables
 * (devices, control-path ids, deployables, attributes, attach handles) as data-modifying CTEs,
 * each `INSERT … SELECT FROM unnest($arrays)` with the foreign keys already filled in.
 *
 * Why not the unit of work, nor MikroORM's `insertMany`: a fleet's cold start brings hundreds of
 * hosts per flush, and bench:fleet (10,000 hosts) spent a fifth of the conductor's CPU building
 * multi-row INSERTs and entities for them, after a round trip per table to draw its ids. Why the
 * ids are drawn first rather than joined back by uuid from `RETURNING`: PostgreSQL cannot index a
 * CTE's rows, so those joins ran as nested loops — quadratic in the flush, most of its time.
 * Later reports are diffed through the unit of work (inventory-diff.ts), where changes are few.
 */
export async function insertInventories(db: Kysely<object>, reports: { host: string; devices: DeviceT[] }[]): Promise<void> {
  const rows = reports.flatMap(({ host, devices }) => devices.filter((d) => !d.stub).map((d, position) => ({ host, d, position })));
  if (rows.length === 0) return;
  const deployableCount = rows.reduce((n, r) => n + r.d.deployables.length, 0);
  const { rows: [ids] } = await sql<{ dev: number[]; cp: number[]; dep: number[] }>`
    select array(select nextval(pg_get_serial_sequence('devices', 'id'))::int from generate_series(1, ${rows.length}::int)) as dev,
           array(select nextval(pg_get_serial_sequence('controlpath_ids', 'id'))::int from generate_series(1, ${rows.length}::int)) as cp,
           array(select nextval(pg_get_serial_sequence('deployables', 'id'))::int from generate_series(1, ${deployableCount}::int)) as dep`.execute(db);
  const dev = { id: [] as number[], uuid: [] as string[], type: [] as string[], vendor: [] as string[], model: [] as string[], std: [] as string[], vstd: [] as string[],
    host: [] as string[], driver: [] as string[], pos: [] as number[] };
  const cp = { id: [] as number[], uuid: [] as string[], dev: [] as number[], info: [] as string[] };
  const dep = { id: [] as number[], uuid: [] as string[], name: [] as string[], num: [] as number[], dev: [] as number[], rp: [] as string[], driver: [] as (string | null)[], pos: [] as number[] };
  const attr = { uuid: [] as string[], dep: [] as number[], key: [] as string[], value: [] as string[], pos: [] as number[] };
  const ah = { uuid: [] as string[], dep: [] as number[], cp: [] as number[], inUse: [] as boolean[], type: [] as string[], info: [] as string[], pos: [] as number[] };
  let nextDep = 0;
  rows.forEach(({ host, d, position }, i) => {
    const devId = ids!.dev[i]!, cpId = ids!.cp[i]!;
    dev.id.push(devId); dev.uuid.push(d.uuid); dev.type.push(d.type); dev.vendor.push(d.vendor); dev.model.push(d.model); dev.std.push(d.stdBoardInfo);
    dev.vstd.push(d.vendorBoardInfo); dev.host.push(host); dev.driver.push(d.driver); dev.pos.push(position);
    cp.id.push(cpId); cp.uuid.push(stableId(host, 'cpid', d.controlPath.info)); cp.dev.push(devId); cp.info.push(d.controlPath.info);
    d.deployables.forEach((x, j) => {
      const depId = ids!.dep[nextDep++]!;
      dep.id.push(depId); dep.uuid.push(x.uuid); dep.name.push(x.name); dep.num.push(x.numAccelerators); dep.dev.push(devId);
      dep.rp.push(uuid3(NAMESPACE_DNS, x.name)); dep.driver.push(x.driverName ?? null); dep.pos.push(j);
      x.attributes.forEach((a, k) => {
        attr.uuid.push(stableId(x.uuid, 'attr', a.key)); attr.dep.push(depId); attr.key.push(a.key); attr.value.push(a.value); attr.pos.push(k);
      });
      x.attachHandles.forEach((h, k) => {
        ah.uuid.push(h.uuid); ah.dep.push(depId); ah.cp.push(cpId); ah.inUse.push(h.inUse); ah.type.push(h.attachType); ah.info.push(h.attachInfo); ah.pos.push(k);
      });
    });
  });
  await sql`
    with dev as (
      insert into devices (id, uuid, type, vendor, model, std_board_info, vendor_board_info, hostname, status, driver, stub, position, created_at, updated_at)
      select x.id, x.uuid, x.type, x.vendor, x.model, x.std, x.vstd, x.host, 'enabled', x.driver, false, x.pos, now(), now()
        from unnest(${dev.id}::int[], ${dev.uuid}::text[], ${dev.type}::text[], ${dev.vendor}::text[], ${dev.model}::text[], ${dev.std}::text[],
                    ${dev.vstd}::text[], ${dev.host}::text[], ${dev.driver}::text[], ${dev.pos}::int[]) as x(id, uuid, type, vendor, model, std, vstd, host, driver, pos)
    ), cp as (
      insert into controlpath_ids (id, uuid, device_id, cpid_type, cpid_info, created_at, updated_at)
      select x.id, x.uuid, x.dev, 'PCI', x.info, now(), now()
        from unnest(${cp.id}::int[], ${cp.uuid}::text[], ${cp.dev}::int[], ${cp.info}::text[]) as x(id, uuid, dev, info)
    ), dep as (
      insert into deployables (id, uuid, name, num_accelerators, device_id, rp_uuid, driver_name, position, created_at, updated_at)
      select x.id, x.uuid, x.name, x.num, x.dev, x.rp, x.driver, x.pos, now(), now()
        from unnest(${dep.id}::int[], ${dep.uuid}::text[], ${dep.name}::text[], ${dep.num}::int[], ${dep.dev}::int[], ${dep.rp}::text[], ${dep.driver}::text[],
                    ${dep.pos}::int[]) as x(id, uuid, name, num, dev, rp, driver, pos)
    ), attr as (
      insert into attributes (uuid, deployable_id, key, value, position, created_at, updated_at)
      select x.uuid, x.dep, x.key, x.value, x.pos, now(), now()
        from unnest(${attr.uuid}::text[], ${attr.dep}::int[], ${attr.key}::text[], ${attr.value}::text[], ${attr.pos}::int[]) as x(uuid, dep, key, value, pos)
    )
    insert into attach_handles (uuid, deployable_id, cpid_id, in_use, attach_type, attach_info, position, created_at, updated_at)
    select x.uuid, x.dep, x.cp, x.in_use, x.type, x.info, x.pos, now(), now()
      from unnest(${ah.uuid}::text[], ${ah.dep}::int[], ${ah.cp}::int[], ${ah.inUse}::boolean[], ${ah.type}::text[], ${ah.info}::text[], ${ah.pos}::int[])
           as x(uuid, dep, cp, in_use, type, info, pos)`.execute(db);
}
