import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DeviceT, HardwareIdentityT } from '../../model/index.js';
import { devicesDir } from './sysfs.js';

/**
 * What a card says about itself in sysfs, so that a different card in the same slot is a new
 * device (docs/drivers.md, "Identity"):
 * - the PCIe Device Serial Number, the extended capability 0x0003 of the function's `config`
 *   (PCI Express Base Specification §7.9.3; what `lspci -vv` prints as "Device Serial Number").
 *   sysfs gives the extended config space (past byte 256) to root only, as the agent runs; a
 *   card without the capability, or a reader that sees only the first 256 bytes, has none.
 * - a NIC's permanent MAC address (`net/<if>/address` of its physical function).
 */

const DSN_CAPABILITY = 0x0003;
const EXTENDED_START = 0x100;

/** The Device Serial Number in `config` bytes, as lspci writes it (`00-11-22-ff-fe-33-44-55`), or null. */
export function dsnOf(config: Buffer): string | null {
  let offset = EXTENDED_START;
  // At most one capability per dword of the extended space: a loop in a broken list ends.
  for (let hops = 0; hops < 1024 && offset >= EXTENDED_START && offset + 12 <= config.length; hops++) {
    const header = config.readUInt32LE(offset);
    if (header === 0 || header === 0xffffffff) return null;
    if ((header & 0xffff) === DSN_CAPABILITY) {
      const lower = config.readUInt32LE(offset + 4);
      const upper = config.readUInt32LE(offset + 8);
      if (lower === 0 && upper === 0) return null;
      const hex = upper.toString(16).padStart(8, '0') + lower.toString(16).padStart(8, '0');
      return hex.match(/../g)!.join('-');
    }
    const next = (header >>> 20) & 0xffc;
    if (next === 0) return null;
    offset = next;
  }
  return null;
}

/** The function's PCIe Device Serial Number, or null (no capability, or the config space is not readable). */
export async function pcieSerial(root: string, address: string): Promise<string | null> {
  try {
    return dsnOf(await readFile(join(devicesDir(root), address, 'config')));
  } catch {
    return null;
  }
}

/** A MAC read from sysfs, lower case; null when absent or all zeros (a function without one). */
export async function macOf(root: string, address: string, netdev: string | undefined): Promise<string | null> {
  if (!netdev) return null;
  try {
    const mac = (await readFile(join(devicesDir(root), address, 'net', netdev, 'address'), 'utf8')).trim().toLowerCase();
    return /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(mac) && mac !== '00:00:00:00:00:00' ? mac : null;
  } catch {
    return null;
  }
}

/** The first identity a card gives, in the order asked; undefined where it gives none. */
export function firstIdentity(...candidates: [string | null | undefined, string][]): HardwareIdentityT | undefined {
  for (const [serial, source] of candidates) if (serial) return { serial, source };
  return undefined;
}

/** A card's PCIe serial as its identity (FPGA, QAT, the generic and pci drivers). */
export async function pcieIdentity(root: string, address: string): Promise<HardwareIdentityT | undefined> {
  return firstIdentity([await pcieSerial(root, address), 'pcie dsn']);
}

/** The PCI address a device's control path names (`{"bus": "3b", …}` → `0000:3b:00.0`). */
function addressOf(device: DeviceT): string | undefined {
  try {
    const i = JSON.parse(device.controlPath.info) as Record<string, string>;
    return i.domain && i.bus && i.device && i.function ? `${i.domain}:${i.bus}:${i.device}.${i.function}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `devices`, each with the identity its card gives: the driver's own (`own`: nvidia-smi's GPU
 * UUID, a NIC's MAC) first, else its PCIe serial; a device whose card gives none is left without.
 */
export async function withIdentity(
  root: string,
  devices: DeviceT[],
  own: (device: DeviceT, address: string) => Promise<HardwareIdentityT | undefined> | HardwareIdentityT | undefined = () => undefined,
): Promise<DeviceT[]> {
  return Promise.all(
    devices.map(async (d) => {
      const address = addressOf(d);
      if (d.identity || !address) return d;
      const identity = (await own(d, address)) ?? (await pcieIdentity(root, address));
      return identity ? { ...d, identity } : d;
    }),
  );
}
