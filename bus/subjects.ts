/**
 * Every subject the system uses, named in one place. All live under `cyborg.`; a deployment
 * can add a prefix (tests do, so that files running in parallel never hear each other).
 *
 * | subject                          | pattern        | from → to                 |
 * | -------------------------------- | -------------- | ------------------------- |
 * | cyborg.agent.register            | request/reply  | agent → conductor         |
 * | cyborg.agent.inventory           | request/reply  | agent → conductor         |
 * | cyborg.agent.heartbeat           | publish        | agent → conductor         |
 * | cyborg.agent.health              | publish        | agent → conductor         |
 * | cyborg.agent.cmd.<host>          | request/reply  | conductor → one agent     |
 * | cyborg.agent.driver.<host>       | request/reply  | conductor → one agent     |
 * | cyborg.telemetry.<host>          | publish        | agent → anyone (no store) |
 * | cyborg.progress.<host>           | publish        | agent → anyone (no store) |
 * | cyborg.events.<kind>             | publish        | conductor → api processes |
 * | cyborg.conductor.api             | request/reply  | api → conductor           |
 * | cyborg.conductor.<id>.api        | request/reply  | api → one conductor       |
 * | cyborg.conductor.<id>.fwd.<kind> | req/publish    | conductor → lease holder  |
 * | cyborg.views                     | publish        | conductor → api processes |
 * | cyborg.svc.<role>.<id>.<VERB>    | request/reply  | operator → any process    |
 *
 * Every subject an agent speaks or listens on ends with its host, so that the NATS server can
 * confine an agent's credentials to its own host (deploy/nats/) and a conductor can check that a
 * report names the host whose subject it came on (`reportHost`).
 */
export const Subjects = {
  /** What the conductors listen on: every host's reports of one kind (an agent sends on `report`). */
  register: 'cyborg.agent.register.*',
  inventory: 'cyborg.agent.inventory.*',
  heartbeat: 'cyborg.agent.heartbeat.*',
  /** Per-device health checks of one host, in one message per poll (HealthMessage). */
  health: 'cyborg.agent.health.*',
  /** Where the agent of `host` sends a report of `kind`. */
  report: (kind: ReportKind, host: string) => `cyborg.agent.${kind}.${token(host)}`,
  /** The reply inbox prefix of the agent of `host` (its credentials may subscribe only there). */
  agentInbox: (host: string) => `_INBOX.agent.${token(host)}`,
  /** The reply inbox prefix of every api process: its credentials may subscribe there and not to other roles' replies. */
  apiInbox: '_INBOX.api',
  command: (host: string) => `cyborg.agent.cmd.${token(host)}`,
  commandAll: 'cyborg.agent.cmd.*',
  /** Driver lifecycle (install / uninstall / update) and service discovery on one host. */
  driverCommand: (host: string) => `cyborg.agent.driver.${token(host)}`,
  telemetry: (host: string) => `cyborg.telemetry.${token(host)}`,
  telemetryAll: 'cyborg.telemetry.*',
  /** Steps of a programming under way on `host` (ProgressMessage). */
  progress: (host: string) => `cyborg.progress.${token(host)}`,
  progressAll: 'cyborg.progress.*',
  event: (kind: EventKind) => `cyborg.events.${kind}`,
  eventsAll: 'cyborg.events.>',
  conductorApi: 'cyborg.conductor.api',
  /** One conductor's own API subject: the api role sends a host's writes to its lease holder. */
  conductorApiOf: (conductorId: string) => `cyborg.conductor.${token(conductorId)}.api`,
  /** Agent reports forwarded by the conductor that heard them to the one holding the host's lease. */
  conductorForward: (conductorId: string, kind: 'register' | 'inventory' | 'heartbeat' | 'health') => `cyborg.conductor.${token(conductorId)}.fwd.${kind}`,
  /** Committed views (accelerators, hosts, ARQs) in batches: the api role's read model. */
  views: 'cyborg.views',
  /** Liveness of a role process: `cyborg.svc.<role>.<id>.PING|INFO|STATS`. */
  service: (role: string, id: string, verb: 'PING' | 'INFO' | 'STATS') => `cyborg.svc.${role}.${token(id)}.${verb}`,
} as const;

export type EventKind = 'transition' | 'host' | 'arq' | 'driver';
export type ReportKind = 'register' | 'inventory' | 'heartbeat' | 'health';

const REPORT = /^cyborg\.agent\.(?:register|inventory|heartbeat|health)\.([^.]+)$/;

/**
 * The host token of an agent report's subject (`cyborg.agent.<kind>.<host>`, without the
 * deployment prefix); undefined for any other subject (a report forwarded between conductors).
 */
export function reportHost(subject: string): string | undefined {
  return REPORT.exec(subject)?.[1];
}

/** Host names may hold dots; NATS tokens may not. */
export function token(host: string): string {
  return host.replace(/[^A-Za-z0-9_-]/g, '_');
}

/**
 * Who sends on `subject` (without the deployment prefix), as far as the subject says: how a
 * message whose envelope names no sender (0.1.0's) is put on the roster. `reply` is true for the
 * answer to a request sent there: its responder.
 */
export function senderOf(subject: string, reply = false): { role: string; host: string } {
  const t = subject.split('.');
  if (t[0] !== 'cyborg') return { role: 'unknown', host: '?' };
  if (t[1] === 'agent') {
    if (t[2] === 'cmd' || t[2] === 'driver') return reply ? { role: 'agent', host: t[3] ?? '?' } : { role: 'conductor', host: '?' };
    return reply ? { role: 'conductor', host: '?' } : { role: 'agent', host: t[3] ?? '?' };
  }
  if (t[1] === 'telemetry' || t[1] === 'progress') return { role: 'agent', host: t[2] ?? '?' };
  if (t[1] === 'conductor') return reply || t[3] === 'fwd' ? { role: 'conductor', host: t[3] === 'fwd' ? '?' : (t[2] ?? '?') } : { role: 'api', host: '?' };
  if (t[1] === 'events' || t[1] === 'views') return { role: 'conductor', host: '?' };
  if (t[1] === 'svc') return reply ? { role: t[2] ?? 'unknown', host: t[3] ?? '?' } : { role: 'operator', host: '?' };
  return { role: 'unknown', host: '?' };
}
