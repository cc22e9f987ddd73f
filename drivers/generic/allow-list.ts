import { statSync } from 'node:fs';
import { readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAddress, type PciAddress } from './pci.js';
import type { PciFunction } from './sysfs.js';

/**
 * An allow-list in the format of Nova's `[pci] passthrough_whitelist` (now `device_spec`): a
 * JSON object or array of objects; an entry matches a function when every key it names
 * matches. Keys: `vendor_id`, `product_id`, `address` (glob string `[[[[dom]:]bus]:][slot][.[fn]]`
 * with `*`, or an object of regular expressions `{domain, bus, slot, function}`), `devname`
 * (network interface). An entry that admits a physical function admits its virtual functions
 * too (Nova asks for an exact PF address for that; we accept any match). Nova's `resource_class` and `traits` override what the table gives; our
 * own `mdev_type` asks for a GPU to be offered as vGPUs of that mediated-device type.
 */
export interface AllowEntry {
  vendor_id?: string;
  product_id?: string;
  address?: string | Partial<Record<keyof PciAddress, string>>;
  devname?: string;
  resource_class?: string;
  traits?: string;
  mdev_type?: string;
  /** Nova's tag: the physical network a NIC function is wired to. */
  physical_network?: string;
}

export class AllowListError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AllowListError';
  }
}

interface CompiledAddress {
  test(a: PciAddress): boolean;
}

interface Compiled {
  entry: AllowEntry;
  address?: CompiledAddress;
}

const KEYS = new Set(['vendor_id', 'product_id', 'address', 'devname', 'resource_class', 'traits', 'mdev_type', 'physical_network', 'remote_managed']);

/** A parsed allow-list. An absent list (`fromJson('')`) is null: the driver's defaults apply. */
export class AllowList {
  private constructor(private readonly entries: Compiled[]) {}

  /** Parses the configured text; throws AllowListError naming the bad entry. */
  static fromJson(text: string): AllowList | null {
    if (text.trim() === '') return null;
    let list: unknown[];
    try {
      const parsed: unknown = JSON.parse(text);
      list = Array.isArray(parsed) ? parsed : [parsed];
    } catch (err) {
      // As Cyborg takes it: the option given on several lines (or several times), one entry each.
      const lines = text.split('\n').filter((l) => l.trim() !== '');
      if (lines.length < 2) throw new AllowListError(`passthrough whitelist is not JSON: ${(err as Error).message}`);
      list = lines.flatMap((line, i) => {
        try {
          const one: unknown = JSON.parse(line);
          return Array.isArray(one) ? one : [one];
        } catch (e) {
          throw new AllowListError(`passthrough whitelist line ${i + 1} is not JSON: ${(e as Error).message}: ${line.trim().slice(0, 64)}`);
        }
      });
    }
    return new AllowList(list.map((e, i) => compile(e, i)));
  }

  /**
   * The first entry that admits `fn`, or undefined. Host-critical functions (bridges, the console
   * display, the root file system's controller) are never admitted, whatever the entries say: a
   * vendor-only entry must not hand an instance the host's own PCI bridges.
   */
  match(
    fn: Pick<PciFunction, 'address' | 'vendorId' | 'productId' | 'netdevs'> & Partial<Pick<PciFunction, 'classCode' | 'bootVga'>>,
    protectedAddresses?: ReadonlySet<string>,
  ): AllowEntry | undefined {
    if (hostCritical(fn, protectedAddresses)) return undefined;
    const own = parseAddress(fn.address);
    return this.entries.find((c) => {
      const e = c.entry;
      if (e.vendor_id !== undefined && norm(e.vendor_id) !== fn.vendorId) return false;
      if (e.product_id !== undefined && norm(e.product_id) !== fn.productId) return false;
      if (e.devname !== undefined && !fn.netdevs.includes(e.devname)) return false;
      return !c.address || (own !== undefined && c.address.test(own));
    })?.entry;
  }
}

function norm(id: string): string {
  return id.toLowerCase().replace(/^0x/, '').padStart(4, '0');
}

function compile(raw: unknown, i: number): Compiled {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new AllowListError(`whitelist entry ${i} is not an object`);
  const entry = raw as Record<string, unknown>;
  for (const k of Object.keys(entry)) {
    if (!KEYS.has(k)) throw new AllowListError(`whitelist entry ${i}: unknown key "${k}"`);
  }
  for (const k of ['vendor_id', 'product_id']) {
    const v = entry[k];
    if (v !== undefined && (typeof v !== 'string' || !/^(0x)?[0-9a-fA-F]{1,4}$/.test(v)))
      throw new AllowListError(`whitelist entry ${i}: ${k} must be 1-4 hex digits`);
  }
  const e = entry as AllowEntry;
  if (e.address === undefined) return { entry: e };
  return { entry: e, address: typeof e.address === 'string' ? globAddress(e.address, i) : regexAddress(e.address, i) };
}

/** Nova's PciAddressGlobSpec: missing or `*` fields match anything; given fields are hex numbers. */
function globAddress(text: string, i: number): CompiledAddress {
  const dot = text.lastIndexOf('.');
  const dbs = dot < 0 ? text : text.slice(0, dot);
  const func = dot < 0 ? '*' : text.slice(dot + 1);
  const parts = dbs.split(':');
  if (parts.length > 3) throw new AllowListError(`whitelist entry ${i}: address "${text}" has too many ":"`);
  const [slot, bus, domain] = [parts.at(-1), parts.at(-2), parts.at(-3)];
  const fields = { domain, bus, slot, function: func };
  const want: Partial<Record<keyof PciAddress, number>> = {};
  for (const [k, v] of Object.entries(fields) as [keyof PciAddress, string | undefined][]) {
    if (v === undefined || v === '' || v === '*') continue;
    if (!/^[0-9a-fA-F]+$/.test(v)) throw new AllowListError(`whitelist entry ${i}: address "${text}" has a bad ${k} "${v}"`);
    want[k] = parseInt(v, 16);
  }
  return {
    test: (a) => (Object.entries(want) as [keyof PciAddress, number][]).every(([k, n]) => parseInt(a[k], 16) === n),
  };
}

/** Nova's PciAddressRegexSpec: each given field is a regular expression over the hex text. */
function regexAddress(spec: Partial<Record<keyof PciAddress, string>>, i: number): CompiledAddress {
  const res: [keyof PciAddress, RegExp][] = [];
  for (const k of ['domain', 'bus', 'slot', 'function'] as const) {
    const v = spec[k];
    if (v === undefined) continue;
    try {
      res.push([k, new RegExp(`^(?:${v})$`, 'i')]);
    } catch {
      throw new AllowListError(`whitelist entry ${i}: address ${k} "${v}" is not a regular expression`);
    }
  }
  return { test: (a) => res.every(([k, re]) => re.test(a[k])) };
}

export type CriticalReason = 'bridge' | 'console' | 'root_storage';

/**
 * Why a function must never be reported, or undefined: a bridge (any class 0x06 device, host and
 * PCI-to-PCI bridges alike), the display the firmware's console runs on (`boot_vga` = 1), or a
 * controller the caller knows holds the root file system (see rootStorageAddress).
 */
export function hostCritical(
  fn: { address: string; classCode?: string; bootVga?: boolean },
  protectedAddresses?: ReadonlySet<string>,
): CriticalReason | undefined {
  if (fn.classCode?.startsWith('06')) return 'bridge';
  if (fn.bootVga) return 'console';
  if (protectedAddresses?.has(fn.address)) return 'root_storage';
  return undefined;
}

/** The kernel's device number as `major:minor` (new_decode_dev), what `/sys/dev/block/` names. */
export function majorMinor(dev: number): string {
  return `${(dev & 0xfff00) >> 8}:${(dev & 0xff) | ((dev >> 12) & 0xfff00)}`;
}

/**
 * The PCI function under the block device that holds `path` (default `/`), or undefined when it
 * cannot be told (a virtual disk, a network root, another sysfs root in tests without the link):
 * `/sys/dev/block/<maj:min>` links into the device tree, and the last PCI address on that path is
 * the storage controller.
 */
export async function rootStorageAddress(sysfsRoot: string, dev: number = statSync('/').dev): Promise<string | undefined> {
  try {
    const target = await readlink(join(sysfsRoot, 'dev', 'block', majorMinor(dev)));
    return target
      .split('/')
      .filter((p) => parseAddress(p) !== undefined)
      .at(-1);
  } catch {
    return undefined;
  }
}
