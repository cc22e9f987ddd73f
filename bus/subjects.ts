/**
 * Every subject the system uses, named in one place. All live under `cyborg.`; a deployment
 * can add a prefix (tests do, so that files running in parallel never hear each other).
 *
 * | subject                          | pattern        | from → to                 |
 * | -------------------------------- | -------------- | ------------------------- |
 * | cyborg.agent.register            | request/reply  | agent → conductor         |
 * | cyborg.agent.inventory           | request/reply  | agent → conductor         |
 * | cyborg.agent.heartbeat           | publish        | agent → conductor         |
 * | cyborg.agent.cmd.<host>          | request/reply  | conductor → one agent     |
 * | cyborg.telemetry.<host>          | publish        | agent → anyone (no store) |
 * | cyborg.events.<kind>             | publish        | conductor → api processes |
 * | cyborg.conductor.api             | request/reply  | api → conductor           |
 */
export const Subjects = {
  register: 'cyborg.agent.register',
  inventory: 'cyborg.agent.inventory',
  heartbeat: 'cyborg.agent.heartbeat',
  command: (host: string) => `cyborg.agent.cmd.${token(host)}`,
  commandAll: 'cyborg.agent.cmd.*',
  telemetry: (host: string) => `cyborg.telemetry.${token(host)}`,
  telemetryAll: 'cyborg.telemetry.*',
  event: (kind: EventKind) => `cyborg.events.${kind}`,
  eventsAll: 'cyborg.events.>',
  conductorApi: 'cyborg.conductor.api',
} as const;

export type EventKind = 'transition' | 'host' | 'arq';

/** Host names may hold dots; NATS tokens may not. */
export function token(host: string): string {
  return host.replace(/[^A-Za-z0-9_-]/g, '_');
}
