import { sanitizeName, stableId } from '../../ids/index.js';
import type { AllowEntry, AllowList } from './allow-list.js';
import { pciInfo, pyJson, slotOf } from './pci.js';
import type { PciFunction } from './sysfs.js';
import { baseTraits, kindOf, modelOf, traitName, UNKNOWN_KIND, type KindRule } from './table.js';
import type { AttachHandleT, DeployableT, DeviceT } from '../../model/index.js';

export interface DiscoverOptions {
  host: string;
  /** The name deployables carry as `driverName` (the agent routes operations by it). */
  driverName: string;
  allow: AllowList | null;
}

/** Where a discovered deployable lives on the host: what operations on it need. */
export interface Placement {
  device: DeviceT;
  /** Address of the card's physical function (its control path). */
  pf: string;
  /** The functions its PCI attach handles name, or the mdev parent for MDEV handles. */
  functions: string[];
  mdevType?: string;
}

export interface Discovery {
  devices: DeviceT[];
  /** By deployable uuid. */
  where: Map<string, Placement>;
}

/** Standard resource classes of Placement that need no CUSTOM_ prefix. */
const STANDARD_RC = new Set(['PGPU', 'VGPU', 'FPGA', 'PCI_DEVICE', 'SRIOV_NET_VF', 'NUMA_SOCKET', 'VGPU_DISPLAY_HEAD']);

/**
 * Turns what sysfs says into Cyborg's model. One device per card (its physical function is the
 * control path); deployables: one per enabled VF when SR-IOV is on, one of vGPUs when an mdev
 * type is asked for, else one for the whole card. Every id derives from host and PCI address.
 */
export function discoverPci(functions: PciFunction[], opts: DiscoverOptions): Discovery {
  const byAddr = new Map(functions.map((f) => [f.address, f]));
  const devices: DeviceT[] = [];
  const where = new Map<string, Placement>();
  const grouped = new Set<string>();
  for (const fn of functions) {
    if (fn.physfn !== null || fn.bootVga || grouped.has(fn.address)) continue;
    const entry = opts.allow?.match(fn);
    const vfs = fn.virtfns.map((a) => byAddr.get(a)).filter((v): v is PciFunction => v !== undefined);
    const rule = admit(fn, vfs, entry, opts.allow);
    if (!rule) continue;
    const members = rule.groupFunctions
      ? functions.filter((f) => f.physfn === null && slotOf(f.address) === slotOf(fn.address) && f.vendorId === fn.vendorId)
      : [fn];
    for (const m of members) grouped.add(m.address);
    const device = deviceOf(fn, rule, opts);
    const add = (dep: DeployableT, placement: Omit<Placement, 'device' | 'pf'>): void => {
      device.deployables.push(dep);
      where.set(dep.uuid, { device, pf: fn.address, ...placement });
    };
    const vfsAdmitted = opts.allow ? vfs.filter((v) => opts.allow!.match(v) || entry) : vfs;
    const mdev = entry?.mdev_type ? fn.mdevTypes.find((t) => t.id === entry.mdev_type) : undefined;
    if (vfsAdmitted.length > 0) {
      for (const vf of vfsAdmitted) {
        const e = opts.allow?.match(vf) ?? entry;
        add(deployable(opts, vf.address, rcOf(e, rule.vfRc), [...baseTraits(rule, vf), 'CUSTOM_VF', ...extraTraits(e)], [pciHandle(vf.address)]), {
          functions: [vf.address],
        });
      }
    } else if (mdev) {
      const n = mdev.availableInstances + mdev.devices.length;
      const handles = Array.from(
        { length: n },
        (_, i): AttachHandleT => ({ uuid: '', attachType: 'MDEV', attachInfo: pyJson({ asked_type: mdev.id, vgpu_mark: `${mdev.id}_${i}` }), inUse: false }),
      );
      const traits = [...baseTraits(rule, fn), traitName('CUSTOM', rule.traitPrefix, 'MDEV', mdev.id), ...extraTraits(entry)];
      add(deployable(opts, fn.address, rcOf(entry, 'VGPU'), traits, handles), { functions: [fn.address], mdevType: mdev.id });
    } else {
      const sriov = fn.sriovTotalVfs > 0 ? ['CUSTOM_PF'] : [];
      const traits = [...baseTraits(rule, fn), ...sriov, ...extraTraits(entry)];
      add(
        deployable(
          opts,
          fn.address,
          rcOf(entry, rule.rc),
          traits,
          members.map((m) => pciHandle(m.address)),
        ),
        { functions: members.map((m) => m.address) },
      );
    }
    devices.push(device);
  }
  return { devices, where };
}

/** Which table row applies, or undefined when the function is not ours to report. */
function admit(fn: PciFunction, vfs: PciFunction[], entry: AllowEntry | undefined, allow: AllowList | null): KindRule | undefined {
  const rule = kindOf(fn);
  if (allow) {
    const anyVf = vfs.some((v) => allow.match(v));
    if (!entry && !anyVf) return undefined;
    return rule ?? UNKNOWN_KIND;
  }
  if (!rule || rule.allowListOnly) return undefined;
  if (rule.needsVfsOrAllowList && vfs.length === 0) return undefined;
  return rule;
}

function deviceOf(fn: PciFunction, rule: KindRule, opts: DiscoverOptions): DeviceT {
  const std: Record<string, string> = {
    class: `0x${fn.classCode}`,
    device_id: `0x${fn.productId}`,
    driver: fn.driver ?? '',
    iommu_group: fn.iommuGroup ?? '',
    numa_node: fn.numaNode === null ? '' : String(fn.numaNode),
    vendor_id: `0x${fn.vendorId}`,
  };
  const vendorInfo: Record<string, string> = {
    sriov_numvfs: String(fn.sriovNumVfs),
    sriov_totalvfs: String(fn.sriovTotalVfs),
    subsystem_device: fn.subsystemDeviceId ? `0x${fn.subsystemDeviceId}` : '',
    subsystem_vendor: fn.subsystemVendorId ? `0x${fn.subsystemVendorId}` : '',
  };
  return {
    uuid: stableId(opts.host, 'pci', fn.address),
    type: rule.type,
    vendor: `0x${fn.vendorId}`,
    model: modelOf(fn),
    stdBoardInfo: pyJson(std),
    vendorBoardInfo: pyJson(vendorInfo),
    stub: false,
    controlPath: { type: 'PCI', info: pciInfo(fn.address) },
    driver: opts.driverName,
    deployables: [],
  };
}

function depName(opts: DiscoverOptions, address: string): string {
  return sanitizeName(`${opts.host}_${address}`);
}

function deployable(opts: DiscoverOptions, address: string, rc: string, traits: string[], handles: AttachHandleT[]): DeployableT {
  const name = depName(opts, address);
  const unique = [...new Set(traits)];
  return {
    uuid: stableId(opts.host, 'deployable', name),
    name,
    numAccelerators: handles.length,
    driverName: opts.driverName,
    attributes: [{ key: 'rc', value: rc }, ...unique.map((t, i) => ({ key: `traits${i + 1}`, value: t }))],
    attachHandles: handles.map((h) => ({ ...h, uuid: stableId(opts.host, 'handle', name, h.attachInfo) })),
  };
}

/** A PCI attach handle; its uuid is set by `deployable()` from host, name and info. */
function pciHandle(address: string): AttachHandleT {
  return { uuid: '', attachType: 'PCI', attachInfo: pciInfo(address), inUse: false };
}

/** Nova's `resource_class` key: a non-standard name gets the CUSTOM_ prefix. */
function rcOf(entry: AllowEntry | undefined, fallback: string): string {
  const rc = entry?.resource_class;
  if (!rc) return fallback;
  const n = traitName(rc);
  return STANDARD_RC.has(n) || n.startsWith('CUSTOM_') ? n : `CUSTOM_${n}`;
}

/** Nova's `traits` key: comma-separated; names without CUSTOM_ get it. */
function extraTraits(entry: AllowEntry | undefined): string[] {
  if (!entry?.traits) return [];
  return entry.traits
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)
    .map((t) => {
      const n = traitName(t);
      return n.startsWith('CUSTOM_') ? n : `CUSTOM_${n}`;
    });
}
