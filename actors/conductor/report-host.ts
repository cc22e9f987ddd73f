import type { Logger } from 'pino';
import { reportHost, token } from '../../bus/index.js';
import type { DeviceT } from '../../model/index.js';

/** Reports refused because their body named another host than their subject. */
// A type, not an interface: the role exposes it as a Record of counters.
export type ReportStats = {
  misaddressedReports: number;
  /** Inventories refused for what they claim: a host that never registered, another host's devices. */
  refusedReports: number;
};

/**
 * Whether an agent report may be believed about the host it names: it must have come on that
 * host's subject, the only one the host's NATS credentials may publish on (deploy/nats/). A
 * report for host B sent on host A's subject is an agent speaking for another host — dropped,
 * logged with both hosts and counted — even on a bus without permissions. A subject that is no
 * report subject (a report forwarded between conductors, already checked where it entered) passes.
 */
export function reportFromItsHost(subject: string, msg: { host: string }, stats: ReportStats, log: Logger): boolean {
  const onSubject = reportHost(subject);
  if (onSubject === undefined || onSubject === token(msg.host)) return true;
  stats.misaddressedReports++;
  log.warn({ subject, subjectHost: onSubject, host: msg.host }, "dropped an agent report naming another host than its subject's");
  return false;
}

/** Why the door refused a report: the `reason` label of `cyborg_conductor_refused_reports`. */
export const REFUSAL_REASONS = [
  // A report whose body names another host than its subject's (counted by the conductor too).
  'misaddressed',
  // An inventory for a host that never registered.
  'unregistered_host',
  // An inventory naming a device, deployable or attach handle another host holds.
  'foreign_device',
  // An inventory naming one id twice.
  'duplicate_device',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

export interface Refusal {
  reason: RefusalReason;
  why: string;
}

/** Every id an inventory claims: devices', deployables' and attach handles' (each unique in the database). */
export function inventoryIds(devices: readonly DeviceT[]): string[] {
  const out: string[] = [];
  for (const d of devices) {
    out.push(d.uuid);
    for (const x of d.deployables) {
      out.push(x.uuid);
      for (const h of x.attachHandles) out.push(h.uuid);
    }
  }
  return out;
}

/**
 * Why an inventory must not be believed, with its reason, or undefined: schemas bound its size and
 * strings; this is what they cannot see. Only a host that registered (or that the database already
 * knows) reports devices — an inventory for a ghost host would make one up — and what another host
 * holds stays that host's: ids derive from the host's own name (ids/index.ts), so a card that
 * really moved is a new device on its new host, and a report naming another host's id is an agent
 * speaking for that host. `holderOf` knows any id it is asked (device, deployable, handle).
 */
export function inventoryRefusalOf(
  host: string,
  devices: readonly DeviceT[],
  known: (host: string) => boolean,
  holderOf: (id: string) => string | undefined,
): Refusal | undefined {
  if (!known(host)) return { reason: 'unregistered_host', why: `host ${host} has not registered` };
  const seen = new Set<string>();
  for (const id of inventoryIds(devices)) {
    if (seen.has(id)) return { reason: 'duplicate_device', why: `id ${id} is reported twice` };
    seen.add(id);
    const holder = holderOf(id);
    if (holder !== undefined && holder !== host) return { reason: 'foreign_device', why: `id ${id} belongs to host ${holder}` };
  }
  return undefined;
}

/** The same check, its text only (the conductor's own, behind the door). */
export function inventoryRefusal(
  host: string,
  devices: readonly DeviceT[],
  known: (host: string) => boolean,
  holderOf: (deployableUuid: string) => string | undefined,
): string | undefined {
  return inventoryRefusalOf(host, devices, known, holderOf)?.why;
}
