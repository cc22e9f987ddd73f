import type { Logger } from 'pino';
import { reportHost, token } from '../../bus/subjects.js';

/** Reports refused because their body named another host than their subject. */
// A type, not an interface: the role exposes it as a Record of counters.
export type ReportStats = {
  misaddressedReports: number;
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
