/**
 * PCI addresses (`dddd:bb:ss.f`) and the JSON Cyborg writes for them. Cyborg serialises the
 * control path and PCI attach handles with Python's `json.dumps(sort_keys=True)`, so the text
 * is `{"bus": "3b", "device": "00", "domain": "0000", "function": "0"}`: keys sorted, `": "` and
 * `", "` separators. The text is an identity (Cyborg diffs reports by it), so it is built
 * byte for byte here, never with JSON.stringify's spacing.
 */
import { CyborgError } from '../../errors/index.js';

export interface PciAddress {
  domain: string;
  bus: string;
  slot: string;
  function: string;
}

const BDF = /^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/;

/** Parses a full address as the kernel names devices; undefined when it is not one. */
export function parseAddress(address: string): PciAddress | undefined {
  const m = BDF.exec(address.toLowerCase());
  if (!m) return undefined;
  return { domain: m[1]!, bus: m[2]!, slot: m[3]!, function: m[4]! };
}

/** The slot a function belongs to (`0000:3b:00`): functions of one card share it. */
export function slotOf(address: string): string {
  return address.slice(0, address.lastIndexOf('.'));
}

/** Python's `json.dumps(obj, sort_keys=True)` for a flat object of strings. */
export function pyJson(obj: Record<string, string>): string {
  const body = Object.keys(obj)
    .sort()
    .map((k) => `${JSON.stringify(k)}: ${JSON.stringify(obj[k])}`)
    .join(', ');
  return `{${body}}`;
}

/** Cyborg's PCI control-path / attach-handle info for an address. */
export function pciInfo(address: string): string {
  const a = parseAddress(address);
  if (!a) throw new CyborgError('driver.failed', `not a PCI address: ${address}`);
  return pyJson({ bus: a.bus, device: a.slot, domain: a.domain, function: a.function });
}

/** Orders addresses as the kernel lists them (domain, bus, slot, function). */
export function compareAddress(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
