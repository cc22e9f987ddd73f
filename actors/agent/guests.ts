import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { addressOf } from '../../drivers/index.js';
import type { DeviceT } from '../../model/index.js';

/**
 * What the running guests on this host hold, read from libvirt's live domain files (one
 * `<name>.xml` per running domain under `/run/libvirt/qemu`, a `<domstatus>` around the
 * `<domain>`; libvirt's domain XML format, "Host device assignment"). A Nova instance is a domain
 * whose `<uuid>` is the instance's; its devices are `<hostdev type='mdev'>` (the mdev's uuid in
 * `<source><address uuid=…/>`) and `<hostdev type='pci'>` (the function's domain, bus, slot and
 * function). The conductor adopts the attach handles they match that nobody holds in its records:
 * what a host that ran OpenStack Cyborg before gave its instances.
 */
export interface Guest {
  instanceUuid: string;
  /** The instance's project, from Nova's metadata (`<nova:owner><nova:project uuid=…>`); null for a guest Nova did not define. */
  projectId: string | null;
  /** Uuids of the mdevs it holds. */
  mdevs: string[];
  /** PCI functions it holds, `0000:3b:00.1`. */
  pci: string[];
}

/** An attach handle a running guest holds. */
export interface GuestHold {
  deployableUuid: string;
  handleUuid: string;
  instanceUuid: string;
  projectId?: string;
}

type Node = Record<string, unknown>;

const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', parseTagValue: false, isArray: (name) => name === 'hostdev' });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `0x3b` → `3b`, padded to `width` hex digits. */
function hex(v: unknown, width: number): string | undefined {
  const m = typeof v === 'string' ? /^(?:0x)?([0-9a-f]+)$/i.exec(v.trim()) : null;
  return m ? m[1]!.toLowerCase().padStart(width, '0').slice(-width) : undefined;
}

/** One domain file's guest, or undefined when it is not a domain with a uuid (or not XML at all). */
export function parseGuest(xml: string): Guest | undefined {
  let doc: Node;
  try {
    doc = parser.parse(xml) as Node;
  } catch {
    return undefined;
  }
  const domain = ((doc.domstatus as Node | undefined)?.domain ?? doc.domain) as Node | undefined;
  const uuid = typeof domain?.uuid === 'string' ? domain.uuid.trim().toLowerCase() : '';
  if (!domain || !UUID.test(uuid)) return undefined;
  const owner = ((domain.metadata as Node | undefined)?.['nova:instance'] as Node | undefined)?.['nova:owner'] as Node | undefined;
  const project = (owner?.['nova:project'] as Node | undefined)?.['@uuid'];
  const guest: Guest = {
    instanceUuid: uuid,
    projectId: typeof project === 'string' && /^[0-9a-f-]{1,64}$/i.test(project) ? project : null,
    mdevs: [],
    pci: [],
  };
  for (const h of ((domain.devices as Node | undefined)?.hostdev as Node[] | undefined) ?? []) {
    const address = (h.source as Node | undefined)?.address as Node | undefined;
    if (!address) continue;
    if (h['@type'] === 'mdev' && typeof address['@uuid'] === 'string' && UUID.test(address['@uuid'])) guest.mdevs.push(address['@uuid'].toLowerCase());
    if (h['@type'] === 'pci') {
      const [d, b, s, f] = [hex(address['@domain'], 4), hex(address['@bus'], 2), hex(address['@slot'], 2), hex(address['@function'], 1)];
      if (d && b && s && f) guest.pci.push(`${d}:${b}:${s}.${f}`);
    }
  }
  return guest;
}

/**
 * The running guests under `dir`; none when libvirt is not there (no such directory). What exists
 * but cannot be read — the directory or a domain file, root's only (mode 0700 and 0600 as libvirt
 * makes them) when the agent runs as another user — is skipped and told to `unreadable`: those
 * guests' devices would otherwise go unadopted without a word.
 */
export async function readGuests(dir: string, unreadable: (path: string, err: unknown) => void = () => undefined): Promise<Guest[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.xml')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') unreadable(dir, err);
    return [];
  }
  const out: Guest[] = [];
  for (const n of names) {
    const text = await readFile(join(dir, n), 'utf8').catch((err: unknown) => {
      unreadable(join(dir, n), err);
      return '';
    });
    const g = parseGuest(text);
    if (g) out.push(g);
  }
  return out;
}

/** A handle's PCI function, or undefined for attach info that names none. */
function pciOf(attachInfo: string): string | undefined {
  try {
    return addressOf(attachInfo).toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * The attach handles of `devices` that the guests hold: an MDEV handle whose uuid is a guest's
 * mdev (a handle's uuid is its mdev's, as in Cyborg), a PCI handle whose function a guest has.
 */
export function guestHolds(devices: readonly DeviceT[], guests: readonly Guest[]): GuestHold[] {
  const byMdev = new Map(guests.flatMap((g) => g.mdevs.map((u) => [u, g] as const)));
  const byPci = new Map(guests.flatMap((g) => g.pci.map((a) => [a, g] as const)));
  const out: GuestHold[] = [];
  for (const d of devices) {
    for (const dep of d.deployables) {
      for (const h of dep.attachHandles) {
        const g = h.attachType === 'MDEV' ? byMdev.get(h.uuid.toLowerCase()) : byPci.get(pciOf(h.attachInfo) ?? '');
        if (g) out.push({ deployableUuid: dep.uuid, handleUuid: h.uuid, instanceUuid: g.instanceUuid, ...(g.projectId ? { projectId: g.projectId } : {}) });
      }
    }
  }
  return out;
}
