import { sql, type Kysely } from 'kysely';
import { rpUuidOf, stableId } from '../ids/index.js';
import { boolCol, intCol, rowsFrom, textCol } from './columns.js';
import type { DeviceT } from '../model/index.js';
import type { DB } from './kysely-schema.js';

/**
 * Hosts' first inventories (no rows yet), all the hosts of a flush together, in two round trips:
 * one draws the new rows' ids from the three parent tables' sequences, one writes the five tables
 * (devices, control-path ids, deployables, attributes, attach handles) as data-modifying CTEs,
 * each `INSERT … SELECT FROM ROWS FROM ($columns)` (columns.ts) with the foreign keys already filled in.
 *
 * Why not the unit of work, nor MikroORM's `insertMany`: a fleet's cold start brings hundreds of
 * hosts per flush, and both build entities and multi-row INSERTs for them in JavaScript, after a
 * round trip per table to draw its ids: the conductor's CPU, not PostgreSQL, becomes the limit. Why the
 * ids are drawn first rather than joined back by uuid from `RETURNING`: PostgreSQL cannot index a
 * CTE's rows, so those joins ran as nested loops — quadratic in the flush, most of its time.
 * Later reports are diffed through the unit of work (inventory-diff.ts), where changes are few.
 */
export async function insertInventories(db: Kysely<DB>, reports: { host: string; devices: DeviceT[] }[]): Promise<void> {
  const parts = reports.map(({ host, devices }) => inventoryRows(host, devices));
  const devCount = parts.reduce((n, p) => n + p.dev.uuid.length, 0);
  if (devCount === 0) return;
  const depCount = parts.reduce((n, p) => n + p.dep.uuid.length, 0);
  const {
    rows: [ids],
  } = await sql<{ dev: number[]; cp: number[]; dep: number[] }>`
    select array(select nextval(pg_get_serial_sequence('devices', 'id'))::int from generate_series(1, ${devCount}::int)) as dev,
           array(select nextval(pg_get_serial_sequence('controlpath_ids', 'id'))::int from generate_series(1, ${devCount}::int)) as cp,
           array(select nextval(pg_get_serial_sequence('deployables', 'id'))::int from generate_series(1, ${depCount}::int)) as dep`.execute(db);
  // Each host's rows point at their parents by index within the host: offset them into the ids.
  const fk = { cpDev: [] as number[], depDev: [] as number[], attrDep: [] as number[], ahDep: [] as number[], ahCp: [] as number[] };
  let devAt = 0,
    depAt = 0;
  for (const p of parts) {
    for (let i = 0; i < p.dev.uuid.length; i++) fk.cpDev.push(ids!.dev[devAt + i]!);
    for (const d of p.dep.dev) fk.depDev.push(ids!.dev[devAt + d]!);
    for (const d of p.attr.dep) fk.attrDep.push(ids!.dep[depAt + d]!);
    for (const d of p.ah.dep) fk.ahDep.push(ids!.dep[depAt + d]!);
    for (const c of p.ah.cp) fk.ahCp.push(ids!.cp[devAt + c]!);
    devAt += p.dev.uuid.length;
    depAt += p.dep.uuid.length;
  }
  const col = <K extends keyof HostRows, C extends keyof HostRows[K]>(table: K, c: C): HostRows[K][C] =>
    (parts.length === 1 ? parts[0]![table][c] : parts.flatMap((p) => p[table][c] as unknown[])) as HostRows[K][C];
  await sql`
    with dev as (
      insert into devices (id, uuid, type, vendor, model, std_board_info, vendor_board_info, hostname, status, driver, stub, position, created_at, updated_at)
      select x.id, x.uuid, x.type, x.vendor, x.model, x.std, x.vstd, x.host, 'enabled', x.driver, false, x.pos, now(), now()
        from ${rowsFrom(
          intCol(ids!.dev),
          textCol(col('dev', 'uuid')),
          textCol(col('dev', 'type')),
          textCol(col('dev', 'vendor')),
          textCol(col('dev', 'model')),
          textCol(col('dev', 'std')),
          textCol(col('dev', 'vstd')),
          textCol(col('dev', 'host')),
          textCol(col('dev', 'driver')),
          intCol(col('dev', 'pos')),
        )}
             as x(id, uuid, type, vendor, model, std, vstd, host, driver, pos)
    ), cp as (
      insert into controlpath_ids (id, uuid, device_id, cpid_type, cpid_info, created_at, updated_at)
      select x.id, x.uuid, x.dev, 'PCI', x.info, now(), now()
        from ${rowsFrom(intCol(ids!.cp), textCol(col('cp', 'uuid')), intCol(fk.cpDev), textCol(col('cp', 'info')))} as x(id, uuid, dev, info)
    ), dep as (
      insert into deployables (id, uuid, name, num_accelerators, device_id, rp_uuid, driver_name, position, created_at, updated_at)
      select x.id, x.uuid, x.name, x.num, x.dev, x.rp, x.driver, x.pos, now(), now()
        from ${rowsFrom(
          intCol(ids!.dep),
          textCol(col('dep', 'uuid')),
          textCol(col('dep', 'name')),
          intCol(col('dep', 'num')),
          intCol(fk.depDev),
          textCol(col('dep', 'rp')),
          textCol(col('dep', 'driver')),
          intCol(col('dep', 'pos')),
        )} as x(id, uuid, name, num, dev, rp, driver, pos)
    ), attr as (
      insert into attributes (uuid, deployable_id, key, value, position, created_at, updated_at)
      select x.uuid, x.dep, x.key, x.value, x.pos, now(), now()
        from ${rowsFrom(textCol(col('attr', 'uuid')), intCol(fk.attrDep), textCol(col('attr', 'key')), textCol(col('attr', 'value')), intCol(col('attr', 'pos')))}
             as x(uuid, dep, key, value, pos)
    )
    insert into attach_handles (uuid, deployable_id, cpid_id, in_use, attach_type, attach_info, position, created_at, updated_at)
    select x.uuid, x.dep, x.cp, x.in_use, x.type, x.info, x.pos, now(), now()
      from ${rowsFrom(
        textCol(col('ah', 'uuid')),
        intCol(fk.ahDep),
        intCol(fk.ahCp),
        boolCol(col('ah', 'inUse')),
        textCol(col('ah', 'type')),
        textCol(col('ah', 'info')),
        intCol(col('ah', 'pos')),
      )} as x(uuid, dep, cp, in_use, type, info, pos)`.execute(db);
  // The host actor keeps its report for life: its rows must not stay with it.
  for (const { devices } of reports) ROWS.delete(devices);
}

/** One host's report as the columns of its rows; parents referenced by index within the host. */
export interface HostRows {
  dev: { uuid: string[]; type: string[]; vendor: string[]; model: string[]; std: string[]; vstd: string[]; host: string[]; driver: string[]; pos: number[] };
  cp: { uuid: string[]; info: string[] };
  dep: { uuid: string[]; name: string[]; num: number[]; dev: number[]; rp: string[]; driver: (string | null)[]; pos: number[] };
  attr: { uuid: string[]; dep: number[]; key: string[]; value: string[]; pos: number[] };
  ah: { uuid: string[]; dep: number[]; cp: number[]; inUse: boolean[]; type: string[]; info: string[]; pos: number[] };
}

const ROWS = new WeakMap<DeviceT[], HostRows>();

/**
 * A report's rows (memoized per report until written): the journal builds them when the report
 * is committed, while an earlier flush is in PostgreSQL, so the flush that writes them only
 * assigns ids.
 */
export function inventoryRows(host: string, devices: DeviceT[]): HostRows {
  const memo = ROWS.get(devices);
  if (memo && memo.dev.host[0] === host) return memo;
  const r: HostRows = {
    dev: { uuid: [], type: [], vendor: [], model: [], std: [], vstd: [], host: [], driver: [], pos: [] },
    cp: { uuid: [], info: [] },
    dep: { uuid: [], name: [], num: [], dev: [], rp: [], driver: [], pos: [] },
    attr: { uuid: [], dep: [], key: [], value: [], pos: [] },
    ah: { uuid: [], dep: [], cp: [], inUse: [], type: [], info: [], pos: [] },
  };
  for (const d of devices) {
    if (d.stub) continue;
    const devIndex = r.dev.uuid.length;
    r.dev.uuid.push(d.uuid);
    r.dev.type.push(d.type);
    r.dev.vendor.push(d.vendor);
    r.dev.model.push(d.model);
    r.dev.std.push(d.stdBoardInfo);
    r.dev.vstd.push(d.vendorBoardInfo);
    r.dev.host.push(host);
    r.dev.driver.push(d.driver);
    r.dev.pos.push(devIndex);
    r.cp.uuid.push(stableId(host, 'cpid', d.controlPath.info));
    r.cp.info.push(d.controlPath.info);
    d.deployables.forEach((x, j) => {
      const depIndex = r.dep.uuid.length;
      r.dep.uuid.push(x.uuid);
      r.dep.name.push(x.name);
      r.dep.num.push(x.numAccelerators);
      r.dep.dev.push(devIndex);
      r.dep.rp.push(rpUuidOf(x));
      r.dep.driver.push(x.driverName ?? null);
      r.dep.pos.push(j);
      x.attributes.forEach((a, k) => {
        r.attr.uuid.push(stableId(x.uuid, 'attr', a.key));
        r.attr.dep.push(depIndex);
        r.attr.key.push(a.key);
        r.attr.value.push(a.value);
        r.attr.pos.push(k);
      });
      x.attachHandles.forEach((h, k) => {
        r.ah.uuid.push(h.uuid);
        r.ah.dep.push(depIndex);
        r.ah.cp.push(devIndex);
        r.ah.inUse.push(h.inUse);
        r.ah.type.push(h.attachType);
        r.ah.info.push(h.attachInfo);
        r.ah.pos.push(k);
      });
    });
  }
  ROWS.set(devices, r);
  return r;
}
