import { stableId } from '../ids/index.js';
import { parseAddress, pyJson } from './generic/pci.js';
import type { AttachHandleT, AttributeT, DeployableT, DeviceT, HardwareIdentityT } from '../model/index.js';
import { CyborgError } from '../errors/index.js';

/**
 * The pieces of a report in the exact shape OpenStack Cyborg's vendor drivers give them, so that
 * a cloud moving from Cyborg keeps its device profiles, its resource providers (their uuids are
 * uuid3 of the deployable name) and its attach-handle identities (diffed by attach_info text).
 */

/** Cyborg's `rc` attribute then `trait0`, `trait1`, … in the order the driver lists them. */
export function cyborgAttributes(rc: string, traits: readonly string[]): AttributeT[] {
  return [{ key: 'rc', value: rc }, ...traits.map((t, i) => ({ key: `trait${i}`, value: t }))];
}

function bdf(address: string): Record<string, string> {
  const a = parseAddress(address);
  if (!a) throw new CyborgError('driver.failed', `not a PCI address: ${address}`);
  return { bus: a.bus, device: a.slot, domain: a.domain, function: a.function };
}

/** Cyborg's `pci_str_to_json(address, physnet)`: sorted keys, Python spacing, physnet when given. */
export function pciJson(address: string, physnet?: string | null): string {
  return pyJson({ ...bdf(address), ...(physnet ? { physical_network: physnet } : {}) });
}

/** Cyborg's `mdev_str_to_json(address, asked_type, vgpu_mark)`. */
export function mdevJson(address: string, askedType: string, vgpuMark: string, extra: Record<string, string> = {}): string {
  return pyJson({ ...bdf(address), asked_type: askedType, vgpu_mark: vgpuMark, ...extra });
}

export function pciHandle(host: string, name: string, address: string, physnet?: string | null): AttachHandleT {
  const attachInfo = pciJson(address, physnet);
  return { uuid: stableId(host, 'handle', name, attachInfo), attachType: 'PCI', attachInfo, inUse: false };
}

export function handleOf(host: string, name: string, attachType: AttachHandleT['attachType'], attachInfo: string): AttachHandleT {
  return { uuid: stableId(host, 'handle', name, attachInfo), attachType, attachInfo, inUse: false };
}

export interface DeployableSpec {
  host: string;
  /** Cyborg's name, kept byte for byte: the resource provider's uuid derives from it. */
  name: string;
  driverName: string;
  rc: string;
  traits: readonly string[];
  handles: AttachHandleT[];
  /** Defaults to the number of handles. */
  numAccelerators?: number;
}

export function cyborgDeployable(spec: DeployableSpec): DeployableT {
  return {
    uuid: stableId(spec.host, 'deployable', spec.name),
    name: spec.name,
    numAccelerators: spec.numAccelerators ?? spec.handles.length,
    driverName: spec.driverName,
    attributes: cyborgAttributes(spec.rc, spec.traits),
    attachHandles: spec.handles,
  };
}

export interface DeviceSpec {
  host: string;
  /** Address of the card's physical function: its control path. */
  address: string;
  type: DeviceT['type'];
  vendor: string;
  model: string;
  stdBoardInfo: Record<string, string | null>;
  vendorBoardInfo: string;
  driver: string;
  deployables: DeployableT[];
  stub?: boolean;
  /** What the card says about itself (drivers/generic/identity.ts); absent where it says nothing. */
  identity?: HardwareIdentityT;
}

export function cyborgDevice(spec: DeviceSpec): DeviceT {
  return {
    uuid: stableId(spec.host, 'pci', spec.address),
    type: spec.type,
    vendor: spec.vendor,
    model: spec.model,
    stdBoardInfo: pyDumps(spec.stdBoardInfo),
    vendorBoardInfo: spec.vendorBoardInfo,
    stub: spec.stub ?? false,
    controlPath: { type: 'PCI', info: pciJson(spec.address) },
    driver: spec.driver,
    deployables: spec.deployables,
    ...(spec.identity ? { identity: spec.identity } : {}),
  };
}

/** Python's `json.dumps(dict)` of a flat dict, in insertion order: Cyborg's board-info text. */
export function pyDumps(obj: Record<string, string | null>): string {
  return `{${Object.entries(obj)
    .map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`)
    .join(', ')}}`;
}

/** `CUSTOM_<PARTS>`: upper case, `[A-Z0-9_]` only, as Placement requires of custom names. */
export function customName(...parts: string[]): string {
  return ['CUSTOM', ...parts]
    .join('_')
    .toUpperCase()
    .replace(/[^A-Z0-9_]/g, '_');
}

/** Parses Cyborg's `physnet:dev1|dev2` mapping lists (`physical_device_mappings`). */
export function parseMappings(list: readonly string[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const m of list) {
    const i = m.indexOf(':');
    if (i < 0) throw new CyborgError('config.invalid', `invalid mapping "${m}": expected <name>:<device>|<device>`);
    const key = m.slice(0, i).trim();
    if (!key) throw new CyborgError('config.invalid', `missing key in mapping "${m}"`);
    if (out.has(key)) throw new CyborgError('config.invalid', `key ${key} in mapping "${m}" is not unique`);
    out.set(
      key,
      new Set(
        m
          .slice(i + 1)
          .split('|')
          .map((d) => d.trim())
          .filter(Boolean),
      ),
    );
  }
  return out;
}
