import type { EntityManager } from '@mikro-orm/postgresql';
import type { MachineRecord, Recovered } from '../actors/runtime/index.js';
import { sql } from 'kysely';
import { Accelerator, DeviceProfile, Document, ExtendedAcceleratorRequest, Host, TransitionLog, type ITransitionLog } from './entities/state.js';
import type { DeviceT, TransitionRecord } from '../model/index.js';
import { NAMESPACE_DNS, uuid3 } from '../ids/index.js';
import type { DB } from './kysely-schema.js';

interface DeviceRow {
  id: number;
  uuid: string;
  type: DeviceT['type'];
  vendor: string;
  model: string;
  std_board_info: string;
  vendor_board_info: string;
  hostname: string;
  stub: boolean;
  driver: string;
  cpid_info: string | null;
}
interface DeployableRow {
  id: number;
  device_id: number;
  uuid: string;
  name: string;
  num_accelerators: number;
  driver_name: string | null;
  rp_uuid: string | null;
}
interface AttributeRow {
  deployable_id: number;
  key: string;
  value: string;
}
interface HandleRow {
  deployable_id: number;
  uuid: string;
  attach_type: 'PCI' | 'MDEV' | 'TEST_PCI';
  attach_info: string;
  in_use: boolean;
}

function groupBy<T, K>(rows: T[], key: (r: T) => K): Map<K, T[]> {
  const out = new Map<K, T[]>();
  for (const r of rows) {
    const k = key(r);
    const list = out.get(k);
    if (list) list.push(r);
    else out.set(k, [r]);
  }
  return out;
}

/**
 * Every host's inventory in the driver's report shape, in discovery order (only `hosts`' when
 * given). Read with four plain selects rather than `em.find` with populate: a fleet's inventory
 * is several rows per deployable, and hydrating them all as managed entities would slow the
 * conductor's start for entities nothing changes.
 */
export async function loadInventories(em: EntityManager, hosts?: string[]): Promise<Map<string, DeviceT[]>> {
  const db = em.getKysely<DB>();
  const devWhere = hosts ? sql`where d.hostname = any(${hosts}::text[])` : sql``;
  const ofDevices = hosts ? sql`where device_id in (select id from devices where hostname = any(${hosts}::text[]))` : sql``;
  const ofDeployables = hosts
    ? sql`where deployable_id in (select p.id from deployables p join devices d on d.id = p.device_id where d.hostname = any(${hosts}::text[]))`
    : sql``;
  const [devices, deployables, attributes, handles] = await Promise.all([
    sql<DeviceRow>`select d.id, d.uuid, d.type, d.vendor, d.model, d.std_board_info, d.vendor_board_info, d.hostname, d.stub, d.driver, c.cpid_info
      from devices d left join controlpath_ids c on c.device_id = d.id ${devWhere} order by d.hostname, d.position, d.id`.execute(db),
    sql<DeployableRow>`select id, device_id, uuid, name, num_accelerators, driver_name, rp_uuid from deployables ${ofDevices} order by device_id, position, id`.execute(
      db,
    ),
    sql<AttributeRow>`select deployable_id, key, value from attributes ${ofDeployables} order by deployable_id, position, id`.execute(db),
    sql<HandleRow>`select deployable_id, uuid, attach_type, attach_info, in_use from attach_handles ${ofDeployables} order by deployable_id, position, id`.execute(
      db,
    ),
  ]);
  const depsOf = groupBy(deployables.rows, (r) => r.device_id);
  const attrsOf = groupBy(attributes.rows, (r) => r.deployable_id);
  const handlesOf = groupBy(handles.rows, (r) => r.deployable_id);
  const out = new Map<string, DeviceT[]>();
  for (const d of devices.rows) {
    const dev: DeviceT = {
      uuid: d.uuid,
      type: d.type,
      vendor: d.vendor,
      model: d.model,
      stdBoardInfo: d.std_board_info,
      vendorBoardInfo: d.vendor_board_info,
      stub: d.stub,
      controlPath: { type: 'PCI', info: d.cpid_info ?? '' },
      driver: d.driver,
      deployables: (depsOf.get(d.id) ?? []).map((dep) => ({
        uuid: dep.uuid,
        name: dep.name,
        numAccelerators: dep.num_accelerators,
        driverName: dep.driver_name ?? '',
        attributes: (attrsOf.get(dep.id) ?? []).map((a) => ({ key: a.key, value: a.value })),
        attachHandles: (handlesOf.get(dep.id) ?? []).map((h) => ({ uuid: h.uuid, attachType: h.attach_type, attachInfo: h.attach_info, inUse: h.in_use })),
        // A provider kept from an adoption, not the one its name gives (model/device.ts).
        ...(dep.rp_uuid && dep.rp_uuid !== uuid3(NAMESPACE_DNS, dep.name) ? { rpUuid: dep.rp_uuid } : {}),
      })),
    };
    const list = out.get(d.hostname);
    if (list) list.push(dev);
    else out.set(d.hostname, [dev]);
  }
  return out;
}

/**
 * Hosts with their drivers and inventories, and their accelerators' records: every host's, or only
 * `hosts`' (a takeover of some hosts must not read the whole fleet).
 */
export async function loadHostsState(em: EntityManager, hosts?: string[]): Promise<Pick<Recovered, 'hosts' | 'accelerators'>> {
  const [rows, inventory, accs] = await Promise.all([
    em.find(Host, hosts ? { name: { $in: hosts } } : {}, { populate: ['drivers'], orderBy: { name: 'asc' } }),
    loadInventories(em, hosts),
    em.find(Accelerator, hosts ? { host: { $in: hosts } } : {}, { orderBy: { id: 'asc' } }),
  ]);
  const out: Pick<Recovered, 'hosts' | 'accelerators'> = { hosts: [], accelerators: [] };
  for (const h of rows) {
    out.hosts.push({
      host: h.name,
      record: recordOf(h.state, h.context),
      drivers: h.drivers
        .getItems()
        .sort((a, b) => a.id - b.id)
        .map((d) => ({ name: d.name, version: d.version })),
      devices: inventory.get(h.name) ?? [],
    });
    inventory.delete(h.name);
  }
  // An inventory whose host row never made it (as the memory journal does): assume online.
  for (const [host, devs] of inventory) out.hosts.push({ host, record: recordOf('online', {}), drivers: [], devices: devs });
  for (const a of accs) out.accelerators.push({ id: a.id, host: a.host, record: recordOf(a.state, a.context) });
  return out;
}

/**
 * A machine record read back. jsonb keeps no type: the context is taken as the one its machine
 * committed (db/ stores records as data and imports no machine to check them against).
 */
function recordOf<C>(value: string, context: Record<string, unknown>): MachineRecord<C> {
  return { value, context: context as C };
}

/** Every ARQ's record, in creation order (a fresh `em`, read only). */
export async function loadArqs(em: EntityManager): Promise<Recovered['arqs']> {
  const rows = await em.find(ExtendedAcceleratorRequest, {}, { orderBy: { id: 'asc' } });
  return rows.map((r) => ({ uuid: r.uuid, record: recordOf(r.machineState, r.context) }));
}

/** Reads everything the conductor rebuilds its actor tree from (a fresh `em`, read only). */
export async function loadRecovered(em: EntityManager): Promise<Recovered> {
  const [hosts, arqs, documents] = await Promise.all([loadHostsState(em), loadArqs(em), loadDocuments(em)]);
  return { ...hosts, arqs, documents };
}

/** Device profiles (their own table, as Cyborg's) and the other documents, as documents. */
export async function loadDocuments(em: EntityManager): Promise<Recovered['documents']> {
  const [profiles, docs] = await Promise.all([
    em.find(DeviceProfile, {}, { orderBy: { id: 'asc' } }),
    em.find(Document, {}, { orderBy: { collection: 'asc', id: 'asc' } }),
  ]);
  const documents: Recovered['documents'] = [];
  for (const p of profiles) {
    const groups = (JSON.parse(p.profileJson) as { groups?: unknown[] }).groups ?? [];
    documents.push({
      collection: 'device_profiles',
      id: p.uuid,
      body: {
        uuid: p.uuid,
        name: p.name,
        description: p.description ?? null,
        groups,
        createdAt: p.createdAt.toISOString(),
        updatedAt: p.updatedAt.getTime() === p.createdAt.getTime() ? null : p.updatedAt.toISOString(),
      },
    });
  }
  for (const d of docs) documents.push({ collection: d.collection, id: d.id, body: d.body });
  return documents;
}

/** The newest `limit` log rows of one id, returned oldest first. */
export async function loadHistory(em: EntityManager, id: string, limit: number): Promise<TransitionRecord[]> {
  const rows = await em.find(TransitionLog, { id }, { orderBy: { seq: 'desc' }, limit });
  return rows.reverse().map(transitionOf);
}

/** A log row as the record it was committed as (absent fields stay absent). */
export function transitionOf(r: ITransitionLog): TransitionRecord {
  const t: TransitionRecord = {
    kind: r.kind as TransitionRecord['kind'],
    id: r.id,
    event: r.event,
    from: r.from as TransitionRecord['from'],
    to: r.to as TransitionRecord['to'],
    at: r.at.toISOString(),
  };
  if (r.host) t.host = r.host;
  if (r.actor) t.actor = r.actor;
  if (r.projectId) t.projectId = r.projectId;
  // The names Keystone gave beside the ids: a history read back without them showed a uuid (issue 42).
  if (r.actorName) t.actorName = r.actorName;
  if (r.projectName) t.projectName = r.projectName;
  if (r.requestId) t.requestId = r.requestId;
  if (r.reason) t.reason = r.reason;
  if (r.args) t.args = r.args;
  return t;
}
