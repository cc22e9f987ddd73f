import type { Logger } from 'pino';
import { reportHost, token } from '../../bus/subjects.js';
import type { DeviceT } from '../../model/device.js';

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
  log.warn({ subject, subjectHost: onSubject, host: msg.host }, 'dropped an agent report naming another host than its subject\'s');
  return false;
}

/**
 * Why an inventory must not be believed, or undefined: schemas bound its size and strings; this
 * is what they cannot see. Only a host that registered (or that the database already knows)
 * reports devices — an inventory for a ghost host would make one up — and a deployable another
 * host holds stays that host's: the accelerator id is the deployable's uuid.
 */
export function inventoryRefusal(
  host: string, devices: readonly DeviceT[], known: (host: string) => boolean, holderOf: (deployableUuid: string) => string | undefined,
): string | undefined {
  if (!known(host)) return `host ${host} has not registered`;
  const seen = new Set<string>();
  for (const d of devices) {
    for (const x of d.deployables) {
      if (seen.has(x.uuid)) return `deployable ${x.uuid} is reported twice`;
      seen.add(x.uuid);
      const holder = holderOf(x.uuid);
      if (holder !== undefined && holder !== host) return `deployable ${x.uuid} belongs to host ${holder}`;
    }
  }
  return undefined;
}
