import { readdir, readFile, readlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { compareAddress, parseAddress } from './pci.js';

/** One mediated-device type a PCI function offers (`mdev_supported_types/<id>`). */
export interface MdevType {
  id: string;
  name: string;
  description: string;
  deviceApi: string;
  availableInstances: number;
  /** Uuids of the mdevs already created from this type. */
  devices: string[];
}

/** What sysfs says about one PCI function. Ids are lower-case hex without `0x`. */
export interface PciFunction {
  address: string;
  /** Six hex digits: base class, subclass, programming interface (`030200`). */
  classCode: string;
  vendorId: string;
  productId: string;
  subsystemVendorId: string | null;
  subsystemDeviceId: string | null;
  /** null where the kernel says -1 (no NUMA affinity) or the file is absent. */
  numaNode: number | null;
  iommuGroup: string | null;
  /** The kernel driver bound now (basename of the `driver` link), null when unbound. */
  driver: string | null;
  driverOverride: string | null;
  /** The physical function's address when this is an SR-IOV virtual function. */
  physfn: string | null;
  /** Virtual-function addresses in `virtfnN` order. */
  virtfns: string[];
  sriovTotalVfs: number;
  sriovNumVfs: number;
  mdevTypes: MdevType[];
  /** The firmware's console display: never handed to an instance. */
  bootVga: boolean;
  /** Network interfaces of this function (`net/*`). */
  netdevs: string[];
}

/** `<root>/bus/pci/devices`: where the kernel lists every PCI function. */
export function devicesDir(root: string): string {
  return join(root, 'bus', 'pci', 'devices');
}

/**
 * Reads every PCI function under `<root>/bus/pci/devices`. Files a device lacks (no SR-IOV, no
 * NUMA, kernel too old) read as absent, never as an error: real hosts differ in what they expose.
 */
export async function readPciFunctions(root: string): Promise<PciFunction[]> {
  let names: string[];
  try {
    names = await readdir(devicesDir(root));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []; // no PCI bus (some VMs, containers)
    throw err;
  }
  const addresses = names.filter((n) => parseAddress(n) !== undefined).sort(compareAddress);
  return Promise.all(addresses.map((a) => readFunction(join(devicesDir(root), a), a)));
}

/** One PCI function as `readPciFunctions` reads it, or null when the kernel lists none at `address`. */
export async function readPciFunction(root: string, address: string): Promise<PciFunction | null> {
  const dir = join(devicesDir(root), address);
  return (await list(dir)).length === 0 ? null : readFunction(dir, address);
}

async function readFunction(dir: string, address: string): Promise<PciFunction> {
  const [classCode, vendorId, productId, subVendor, subDevice, numa, iommu, driver, override, physfn, total, num, bootVga, entries] = await Promise.all([
    hex(dir, 'class'),
    hex(dir, 'vendor'),
    hex(dir, 'device'),
    hex(dir, 'subsystem_vendor'),
    hex(dir, 'subsystem_device'),
    text(dir, 'numa_node'),
    link(dir, 'iommu_group'),
    link(dir, 'driver'),
    text(dir, 'driver_override'),
    link(dir, 'physfn'),
    text(dir, 'sriov_totalvfs'),
    text(dir, 'sriov_numvfs'),
    text(dir, 'boot_vga'),
    list(dir),
  ]);
  const virtfnLinks = entries.filter((e) => /^virtfn\d+$/.test(e)).sort((a, b) => Number(a.slice(6)) - Number(b.slice(6)));
  const virtfns = await Promise.all(virtfnLinks.map((l) => link(dir, l)));
  const numaNode = numa === null || Number(numa) < 0 || !Number.isInteger(Number(numa)) ? null : Number(numa);
  return {
    address,
    classCode: (classCode ?? '000000').padStart(6, '0'),
    vendorId: vendorId ?? '0000',
    productId: productId ?? '0000',
    subsystemVendorId: subVendor,
    subsystemDeviceId: subDevice,
    numaNode,
    iommuGroup: iommu,
    driver,
    driverOverride: override === null || override === '(null)' || override === '' ? null : override,
    physfn,
    virtfns: virtfns.filter((v): v is string => v !== null),
    sriovTotalVfs: Number(total ?? 0) || 0,
    sriovNumVfs: Number(num ?? 0) || 0,
    mdevTypes: entries.includes('mdev_supported_types') ? await readMdevTypes(join(dir, 'mdev_supported_types')) : [],
    bootVga: bootVga === '1',
    netdevs: entries.includes('net') ? (await list(join(dir, 'net'))).sort() : [],
  };
}

async function readMdevTypes(dir: string): Promise<MdevType[]> {
  const ids = (await list(dir)).sort();
  return Promise.all(
    ids.map(async (id) => {
      const t = join(dir, id);
      const [name, description, deviceApi, available, devices] = await Promise.all([
        text(t, 'name'),
        text(t, 'description'),
        text(t, 'device_api'),
        text(t, 'available_instances'),
        list(join(t, 'devices')),
      ]);
      return {
        id,
        name: name ?? id,
        description: description ?? '',
        deviceApi: deviceApi ?? '',
        availableInstances: Number(available ?? 0) || 0,
        devices: devices.sort(),
      };
    }),
  );
}

/** A sysfs attribute's text, trimmed; null when absent or unreadable (EACCES, EINVAL on some attributes). */
async function text(dir: string, name: string): Promise<string | null> {
  try {
    return (await readFile(join(dir, name), 'utf8')).trim();
  } catch {
    return null;
  }
}

async function hex(dir: string, name: string): Promise<string | null> {
  const t = await text(dir, name);
  return t === null ? null : t.toLowerCase().replace(/^0x/, '');
}

/** The last path element a sysfs link points at (`driver` → `vfio-pci`, `physfn` → its address). */
async function link(dir: string, name: string): Promise<string | null> {
  try {
    return basename(await readlink(join(dir, name)));
  } catch {
    return null;
  }
}

async function list(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}
