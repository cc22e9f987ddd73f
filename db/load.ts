import type { EntityManager } from '@mikro-orm/postgresql';
import type { DeviceT } from '../bus/schemas.js';
import type { Recovered, TransitionRecord } from '../actors/journal.js';
import { Device, type IDevice } from './entities/inventory.js';
import { Accelerator, DeviceProfile, Document, ExtendedAcceleratorRequest, Host, TransitionLog } from './entities/state.js';

const byPosition = <T extends { position: number; id: number }>(a: T, b: T): number => a.position - b.position || a.id - b.id;

/** Turns the stored rows of one device back into the driver's report shape. */
export function toDeviceT(d: IDevice): DeviceT {
  const cp = d.controlpathIds.getItems()[0];
  return {
    uuid: d.uuid, type: d.type, vendor: d.vendor, model: d.model, stdBoardInfo: d.stdBoardInfo, vendorBoardInfo: d.vendorBoardInfo,
    stub: d.stub, controlPath: { type: 'PCI', info: cp?.cpidInfo ?? '' }, driver: d.driver,
    deployables: d.deployables.getItems().sort(byPosition).map((dep) => ({
      uuid: dep.uuid, name: dep.name, numAccelerators: dep.numAccelerators, driverName: dep.driverName ?? '',
      attributes: dep.attributes.getItems().sort(byPosition).map((a) => ({ key: a.key, value: a.value })),
      attachHandles: dep.attachHandles.getItems().sort(byPosition).map((h) => ({
        uuid: h.uuid, attachType: h.attachType, attachInfo: h.attachInfo, inUse: h.inUse,
      })),
    })),
  };
}

/** Reads everything the conductor rebuilds its actor tree from (a fresh `em`, read only). */
export async function loadRecovered(em: EntityManager): Promise<Recovered> {
  const [hosts, devices, accs, arqs, profiles, docs] = await Promise.all([
    em.find(Host, {}, { populate: ['drivers'], orderBy: { name: 'asc' } }),
    em.find(Device, {}, { populate: ['controlpathIds', 'deployables.attributes', 'deployables.attachHandles'], orderBy: { hostname: 'asc', position: 'asc', id: 'asc' } }),
    em.find(Accelerator, {}, { orderBy: { id: 'asc' } }),
    em.find(ExtendedAcceleratorRequest, {}, { orderBy: { id: 'asc' } }),
    em.find(DeviceProfile, {}, { orderBy: { id: 'asc' } }),
    em.find(Document, {}, { orderBy: { collection: 'asc', id: 'asc' } }),
  ]);
  const inventory = new Map<string, DeviceT[]>();
  for (const d of devices as IDevice[]) {
    const list = inventory.get(d.hostname) ?? [];
    list.push(toDeviceT(d));
    inventory.set(d.hostname, list);
  }
  const out: Recovered = { hosts: [], accelerators: [], arqs: [], documents: [] };
  for (const h of hosts) {
    out.hosts.push({
      host: h.name, record: { value: h.state, context: h.context },
      drivers: h.drivers.getItems().sort((a, b) => a.id - b.id).map((d) => ({ name: d.name, version: d.version })),
      devices: inventory.get(h.name) ?? [],
    });
    inventory.delete(h.name);
  }
  // An inventory whose host row never made it (as the memory journal does): assume online.
  for (const [host, devs] of inventory) out.hosts.push({ host, record: { value: 'online', context: {} }, drivers: [], devices: devs });
  for (const a of accs) out.accelerators.push({ id: a.id, host: a.host, record: { value: a.state, context: a.context } });
  for (const r of arqs) out.arqs.push({ uuid: r.uuid, record: { value: r.machineState, context: r.context } });
  for (const p of profiles) {
    const groups = (JSON.parse(p.profileJson) as { groups?: unknown[] }).groups ?? [];
    out.documents.push({
      collection: 'device_profiles', id: p.uuid,
      body: { uuid: p.uuid, name: p.name, description: p.description ?? null, groups, createdAt: p.createdAt.toISOString(), updatedAt: p.updatedAt.toISOString() },
    });
  }
  for (const d of docs) out.documents.push({ collection: d.collection, id: d.id, body: d.body });
  return out;
}

/** The newest `limit` log rows of one id, returned oldest first. */
export async function loadHistory(em: EntityManager, id: string, limit: number): Promise<TransitionRecord[]> {
  const rows = await em.find(TransitionLog, { id }, { orderBy: { seq: 'desc' }, limit });
  return rows.reverse().map((r) => {
    const t: TransitionRecord = { kind: r.kind as TransitionRecord['kind'], id: r.id, event: r.event, from: r.from, to: r.to, at: r.at.toISOString() };
    if (r.host) t.host = r.host;
    if (r.actor) t.actor = r.actor;
    if (r.requestId) t.requestId = r.requestId;
    if (r.reason) t.reason = r.reason;
    return t;
  });
}
