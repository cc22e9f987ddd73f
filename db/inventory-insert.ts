import type { EntityManager } from '@mikro-orm/postgresql';
import type { DeviceT } from '../bus/schemas.js';
import { stableId, uuid3, NAMESPACE_DNS } from '../drivers/ids.js';
import { AttachHandle, Attribute, ControlpathId, Deployable, Device } from './entities/inventory.js';

const CHUNK = 5_000;

/**
 * Inserts `rows` into `table` with ids drawn from its sequence first, so the children can point
 * at them: `em.insertMany` with plain data returns only the first generated id (7.2.1).
 * Typed loosely on purpose: each call site builds the rows of exactly one entity.
 */
async function insertChunked(em: EntityManager, entity: unknown, table: string, rows: object[]): Promise<number[]> {
  if (rows.length === 0) return [];
  const seq = await em.execute<{ id: number }[]>(
    `select nextval(pg_get_serial_sequence('${table}', 'id'))::int as id from generate_series(1, ?)`, [rows.length]);
  const ids = seq.map((r) => r.id);
  const withIds = rows.map((r, i) => ({ id: ids[i]!, ...r }));
  for (let i = 0; i < withIds.length; i += CHUNK) await em.insertMany(entity as never, withIds.slice(i, i + CHUNK) as never);
  return ids;
}

/**
 * Hosts' first inventories (no rows yet) written with MikroORM's batch insert: one multi-row
 * INSERT per table (chunked), ids drawn from the sequences, instead of one managed entity per row,
 * and all the hosts of a flush together (a fleet's cold start brings hundreds per flush).
 * Why: a host that arrives with 10,000 deployables is ~51,000 rows; through the unit of work that
 * took ~16 s on this machine (longer than an agent waits for its inventory reply), batched ~1 s.
 * Later reports are diffed through the unit of work (inventory-diff.ts), where changes are few.
 */
export async function insertInventories(em: EntityManager, reports: { host: string; devices: DeviceT[] }[]): Promise<void> {
  const now = new Date();
  const at = { createdAt: now, updatedAt: now };
  const devices = reports.flatMap(({ host, devices: report }) => report.filter((d) => !d.stub).map((d, position) => ({ host, d, position })));
  const deviceIds = await insertChunked(em, Device, 'devices', devices.map(({ host, d, position }) => ({
    uuid: d.uuid, type: d.type, vendor: d.vendor, model: d.model, stdBoardInfo: d.stdBoardInfo, vendorBoardInfo: d.vendorBoardInfo,
    hostname: host, status: 'enabled', driver: d.driver, stub: false, position, ...at,
  })));
  const cpidIds = await insertChunked(em, ControlpathId, 'controlpath_ids', devices.map(({ host, d }, i) => ({
    uuid: stableId(host, 'cpid', d.controlPath.info), device: deviceIds[i]!, cpidType: 'PCI', cpidInfo: d.controlPath.info, ...at,
  })));
  const deps = devices.flatMap(({ d }, i) => d.deployables.map((dep, position) => ({ dep, device: deviceIds[i]!, cpid: cpidIds[i]!, position })));
  const depIds = await insertChunked(em, Deployable, 'deployables', deps.map(({ dep, device, position }) => ({
    uuid: dep.uuid, name: dep.name, numAccelerators: dep.numAccelerators, driverName: dep.driverName,
    rpUuid: uuid3(NAMESPACE_DNS, dep.name), device, position, ...at,
  })));
  await insertChunked(em, Attribute, 'attributes', deps.flatMap(({ dep }, i) => dep.attributes.map((a, position) => ({
    uuid: stableId(dep.uuid, 'attr', a.key), deployable: depIds[i]!, key: a.key, value: a.value, position, ...at,
  }))));
  await insertChunked(em, AttachHandle, 'attach_handles', deps.flatMap(({ dep, cpid }, i) => dep.attachHandles.map((h, position) => ({
    uuid: h.uuid, deployable: depIds[i]!, cpid, inUse: h.inUse, attachType: h.attachType, attachInfo: h.attachInfo, position, ...at,
  }))));
}
