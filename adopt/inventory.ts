import { NAMESPACE_DNS, stableId, uuid3 } from '../ids/index.js';
import { BOUND, type DeployableT, type DeviceT } from '../model/index.js';
import { driverFor, ourIds } from './ids.js';
import { xilinxUserOnly } from './xilinx.js';
import type { CyborgData } from './read.js';
import { RowReader } from './rows.js';
import type { Tally } from './tally.js';

/** One adopted deployable: our record's id, and what a bound ARQ needs to find it. */
export interface AdoptedDeployable {
  id: string;
  host: string;
  name: string;
  rpUuid: string;
  capacity: number;
  bitstreamId: string | null;
  maintaining: boolean;
  /** Cyborg's attach-handle row id → our handle uuid. */
  handles: Map<number, string>;
}

/** Cyborg's uuid → ours, by kind: kept in the adoption record of each host. */
export type IdMap = Record<'devices' | 'controlpath_ids' | 'deployables' | 'attributes' | 'attach_handles', Record<string, string>>;

export interface AdoptedInventory {
  /** Per host, the devices in our driver's report shape (what the conductor's journal writes). */
  hosts: Map<string, { devices: DeviceT[]; deployables: AdoptedDeployable[]; ids: IdMap }>;
  /** Cyborg's deployable row id → ours (for the ARQs). */
  byDeployableId: Map<number, AdoptedDeployable>;
  /** Cyborg's attach-handle row ids that exist, adopted or not, with why not where skipped. */
  handleRows: Map<number, { deployableId: number; skipped?: string }>;
}

const TYPES = ['GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD'] as const;
const ATTACH_TYPES = ['PCI', 'MDEV', 'TEST_PCI'] as const;

/** A host's or a device's map from Cyborg's uuids to ours, empty. */
const emptyIds = (): IdMap => ({ devices: {}, controlpath_ids: {}, deployables: {}, attributes: {}, attach_handles: {} });

type Rows = ReturnType<typeof readRows>;

/** A device's deployables as our driver will report them, their ids in `ids`; or why they would not match its first report. */
function mapDeployables(
  myDeps: NonNullable<ReturnType<Rows['depsOf']['get']>>,
  driver: NonNullable<ReturnType<typeof driverFor>>,
  dev: { host: string; maintaining: boolean },
  ours: Awaited<ReturnType<typeof ourIds>>,
  { handlesOf, attrsOf }: Pick<Rows, 'handlesOf' | 'attrsOf'>,
  ids: IdMap,
): { deployables: DeployableT[]; adopted: AdoptedDeployable[]; refusal: string | undefined; cpidInfo?: string } {
  const deployables: DeployableT[] = [];
  const adopted: AdoptedDeployable[] = [];
  let refusal: string | undefined;
  let cpidInfo: string | undefined;
  for (const d of myDeps) {
    const rp = uuid3(NAMESPACE_DNS, d.name);
    if (d.rpUuid !== null && d.rpUuid !== rp) {
      refusal = `${d.f.name}: rp_uuid ${d.rpUuid} is not uuid3(DNS, "${d.name}") = ${rp}, the provider our conductor would keep for it`;
      break;
    }
    const cyborgHandles = handlesOf.get(d.id) ?? [];
    // Cyborg names an Alveo U280/U50 after its user function (.1, one handle); ours after .0 with
    // both: the record becomes ours and keeps Cyborg's provider (adopt/xilinx.ts, docs/adopt.md).
    const mapped = driver === 'xilinx_fpga_driver' && myDeps.length === 1 ? xilinxUserOnly(d.name, cyborgHandles) : undefined;
    const name = mapped?.name ?? d.name;
    const byRow = new Map(cyborgHandles.map((h) => [h.id, h]));
    const shape = mapped?.handles ?? cyborgHandles.map((h) => ({ attachType: h.type, attachInfo: h.info, inUse: h.inUse, cyborgId: h.id }));
    const handleIds = new Map<number, string>();
    const handles: DeployableT['attachHandles'] = [];
    for (const h of shape) {
      const id = ours.handle(name, h.attachInfo);
      if (!id) {
        refusal = `${byRow.get(h.cyborgId ?? -1)?.f.name ?? d.f.name}: our ${driver} reports no attach handle ${h.attachInfo} on ${name}`;
        break;
      }
      handles.push({ uuid: id, attachType: h.attachType, attachInfo: h.attachInfo, inUse: h.inUse });
      if (h.cyborgId === undefined) continue;
      handleIds.set(h.cyborgId, id);
      ids.attach_handles[byRow.get(h.cyborgId)!.uuid] = id;
    }
    if (refusal) break;
    if (mapped) cpidInfo = mapped.cpidInfo;
    const id = ours.deployable(name);
    ids.deployables[d.uuid] = id;
    // The journal names attributes and control paths as the conductor does (db/inventory-insert.ts).
    for (const a of attrsOf.get(d.id) ?? []) ids.attributes[a.uuid] = stableId(id, 'attr', a.key);
    deployables.push({
      uuid: id,
      name,
      numAccelerators: d.num,
      driverName: d.driverName,
      attributes: (attrsOf.get(d.id) ?? []).map((a) => ({ key: a.key, value: a.value })),
      attachHandles: handles,
      ...(mapped ? { rpUuid: rp } : {}),
    });
    adopted.push({
      id,
      host: dev.host,
      name,
      rpUuid: rp,
      capacity: handles.length,
      bitstreamId: d.bitstreamId,
      maintaining: dev.maintaining,
      handles: handleIds,
    });
  }
  return { deployables, adopted, refusal, ...(cpidInfo ? { cpidInfo } : {}) };
}

/**
 * Maps Cyborg's inventory rows onto ours, host by host: every row read with our bounds (a bad one
 * stops everything), every device whose driver we have adopted with its control path,
 * deployables, attributes and attach handles; the others skipped with why.
 */
/** Cyborg's inventory rows read with our bounds and grouped by their parent row; a row naming no parent stops everything. */
function readRows(rows: CyborgData['rows']) {
  const group = <T>(list: T[], key: (x: T) => number): Map<number, T[]> => {
    const m = new Map<number, T[]>();
    for (const x of list) m.set(key(x), [...(m.get(key(x)) ?? []), x]);
    return m;
  };
  const cpids = rows.controlpath_ids.map((r) => {
    const f: RowReader = new RowReader('controlpath_ids', r);
    return { f, id: f.int('id'), uuid: f.uuid('uuid'), deviceId: f.int('device_id'), type: f.oneOf('cpid_type', ['PCI'] as const), info: f.text('cpid_info') };
  });
  const deps = rows.deployables.map((r) => {
    const f: RowReader = new RowReader('deployables', r);
    return {
      f,
      id: f.int('id'),
      uuid: f.uuid('uuid'),
      name: f.text('name'),
      num: f.int('num_accelerators'),
      deviceId: f.int('device_id'),
      rpUuid: f.uuidOrNull('rp_uuid'),
      driverName: f.textOrNull('driver_name') ?? '',
      bitstreamId: f.textOrNull('bitstream_id', BOUND.uuid),
    };
  });
  const attrs = rows.attributes.map((r) => {
    const f: RowReader = new RowReader('attributes', r);
    return { f, uuid: f.uuid('uuid'), deployableId: f.int('deployable_id'), key: f.text('key'), value: f.text('value', BOUND.text) };
  });
  const handles = rows.attach_handles.map((r) => {
    const f: RowReader = new RowReader('attach_handles', r);
    return {
      f,
      id: f.int('id'),
      uuid: f.uuid('uuid'),
      deployableId: f.int('deployable_id'),
      inUse: f.bool('in_use'),
      type: f.oneOf('attach_type', ATTACH_TYPES),
      info: f.text('attach_info'),
    };
  });
  const cpidsOf = group(cpids, (c) => c.deviceId);
  const depsOf = group(deps, (d) => d.deviceId);
  const attrsOf = group(attrs, (a) => a.deployableId);
  const handlesOf = group(handles, (h) => h.deployableId);
  const depIds = new Set(deps.map((d) => d.id));
  for (const h of handles) if (!depIds.has(h.deployableId)) h.f.fail(`deployable_id ${h.deployableId} names no deployable`);
  for (const a of attrs) if (!depIds.has(a.deployableId)) a.f.fail(`deployable_id ${a.deployableId} names no deployable`);
  return { cpidsOf, depsOf, attrsOf, handlesOf, handles };
}

export async function adoptInventory(data: CyborgData, tally: Tally): Promise<AdoptedInventory> {
  const { cpidsOf, depsOf, attrsOf, handlesOf, handles } = readRows(data.rows);

  const out: AdoptedInventory = { hosts: new Map(), byDeployableId: new Map(), handleRows: new Map() };
  for (const h of handles) out.handleRows.set(h.id, { deployableId: h.deployableId });
  for (const r of data.rows.devices) {
    const f: RowReader = new RowReader('devices', r);
    const dev = {
      uuid: f.uuid('uuid'),
      id: f.int('id'),
      type: f.oneOf('type', TYPES),
      vendor: f.text('vendor'),
      model: f.text('model'),
      std: f.textOrNull('std_board_info', BOUND.text) ?? '',
      vendorInfo: f.textOrNull('vendor_board_info', BOUND.text) ?? '',
      host: f.text('hostname'),
      maintaining: data.revision.hasDeviceStatus && f.textOrNull('status') === 'maintaining',
    };
    const myDeps = depsOf.get(dev.id) ?? [];
    const myCpids = cpidsOf.get(dev.id) ?? [];
    const skip = (why: string): void => {
      tally.devices.skipped.push({ row: f.name, why });
      for (const c of myCpids) tally.controlpath_ids.skipped.push({ row: c.f.name, why: `its device is skipped (${f.name})` });
      for (const d of myDeps) {
        tally.deployables.skipped.push({ row: d.f.name, why: `its device is skipped (${f.name})` });
        for (const a of attrsOf.get(d.id) ?? []) tally.attributes.skipped.push({ row: a.f.name, why: `its device is skipped (${f.name})` });
        for (const h of handlesOf.get(d.id) ?? []) {
          tally.attach_handles.skipped.push({ row: h.f.name, why: `its device is skipped (${f.name})` });
          out.handleRows.set(h.id, { deployableId: d.id, skipped: `its device is skipped: ${why}` });
        }
      }
    };
    if (myCpids.length !== 1) {
      skip(`it has ${myCpids.length} control-path ids; Cyborg's drivers report one per device`);
      continue;
    }
    const cpid = myCpids[0]!;
    const cyborgDriver = myDeps[0]?.driverName ?? '';
    const driver = driverFor(cyborgDriver, dev.type);
    if (myDeps.length === 0) {
      skip('it has no deployable: nothing of it is schedulable');
      continue;
    }
    if (!driver) {
      skip(`a driver we do not have: Cyborg's "${cyborgDriver}" for a ${dev.type} (docs/adopt.md lists the drivers adopted)`);
      continue;
    }
    const ours = await ourIds(driver, dev.host);
    const ids = emptyIds();
    const { deployables, adopted, refusal, cpidInfo = cpid.info } = mapDeployables(myDeps, driver, dev, ours, { handlesOf, attrsOf }, ids);
    if (refusal) {
      skip(`it would not match our driver's first report: ${refusal}`);
      continue;
    }
    ids.devices[dev.uuid] = ours.device(cpidInfo);
    ids.controlpath_ids[cpid.uuid] = stableId(dev.host, 'cpid', cpidInfo);
    const device: DeviceT = {
      uuid: ids.devices[dev.uuid]!,
      type: dev.type,
      vendor: dev.vendor,
      model: dev.model,
      stdBoardInfo: dev.std,
      vendorBoardInfo: dev.vendorInfo,
      stub: false,
      controlPath: { type: 'PCI', info: cpidInfo },
      driver,
      deployables,
    };
    const host = out.hosts.get(dev.host) ?? { devices: [], deployables: [], ids: emptyIds() };
    host.devices.push(device);
    host.deployables.push(...adopted);
    for (const k of Object.keys(ids) as (keyof IdMap)[]) Object.assign(host.ids[k], ids[k]);
    out.hosts.set(dev.host, host);
    for (const [i, d] of myDeps.entries()) out.byDeployableId.set(d.id, adopted[i]!);
  }
  return out;
}
