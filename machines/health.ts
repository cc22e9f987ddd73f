/**
 * An accelerator's health and maintenance marks: plain data in the accelerator machine's context
 * (machines/accelerator.ts), changed by pure functions here. They sit beside the lifecycle rather
 * than in a parallel region: a quarantined or drained device keeps its lifecycle state (an
 * attached instance keeps running), and a record's state stays one name that every reader of the
 * journal, the views and the graph already understands.
 */

export type HealthStatus = 'ok' | 'degraded' | 'quarantined';
export type Severity = 'transient' | 'fatal';

export interface HealthState {
  status: HealthStatus;
  /** A fatal fault: the device stays quarantined until an operator resets or clears it. */
  fatal: boolean;
  reason: string | null;
  /** Bad checks since the device was last ok (a single good one between them does not reset it). */
  bad: number;
  /** Consecutive good checks (reset by a bad one) and when the first of them came (ms). */
  good: number;
  goodSince: number | null;
  /** When the status last changed (ms). */
  since: number | null;
}

/** A health check's outcome for one accelerator, as the agent reports it. */
export type HealthSignal = {
  ok: boolean;
  severity?: Severity;
  reason?: string;
  /** When the agent checked (ms since the epoch): the machine keeps no clock of its own. */
  at: number;
};

/**
 * Hysteresis: `enterAfter` bad checks since the device was last ok quarantine (the first one only
 * degrades; good checks in between do not reset the count, or a flapping device never would be);
 * `leaveAfter` consecutive good checks spanning at least `stableForMs` bring it back. A fatal
 * signal quarantines at once and never leaves by itself.
 */
export interface HealthPolicy {
  enterAfter: number;
  leaveAfter: number;
  stableForMs: number;
}

export const DEFAULT_HEALTH_POLICY: HealthPolicy = Object.freeze({ enterAfter: 3, leaveAfter: 3, stableForMs: 30_000 });

export const HEALTHY: HealthState = Object.freeze({ status: 'ok', fatal: false, reason: null, bad: 0, good: 0, goodSince: null, since: null });

/** Why a device is out of service for maintenance: its own mark, its host's drain, or both. */
export interface MaintenanceMark {
  device: boolean;
  host: boolean;
  /** When the first mark was set (ms). */
  since: number;
}

export type MaintenanceScope = 'device' | 'host';

/**
 * The health after `signal`. Returns `h` itself when nothing an observer sees would change and
 * the counters are already where they would go (a healthy device checked healthy): a fleet's
 * routine polls then change nothing at all.
 */
export function nextHealth(h: HealthState, signal: HealthSignal, policy: HealthPolicy): HealthState {
  if (signal.ok) {
    if (h.status === 'ok') return h.bad === 0 ? h : { ...h, bad: 0 };
    if (h.fatal) return h;
    const good = h.good + 1;
    const goodSince = h.goodSince ?? signal.at;
    if (good >= policy.leaveAfter && signal.at - goodSince >= policy.stableForMs) {
      return { ...HEALTHY, since: signal.at };
    }
    // `bad` is kept: a device that flaps (bad, good, bad, …) adds up to quarantine.
    return { ...h, good, goodSince };
  }
  const reason = signal.reason ?? 'unhealthy';
  if (signal.severity === 'fatal') {
    if (h.fatal) return h;
    return { status: 'quarantined', fatal: true, reason, bad: h.bad + 1, good: 0, goodSince: null, since: signal.at };
  }
  const bad = h.bad + 1;
  const status: HealthStatus = h.status === 'quarantined' || bad >= policy.enterAfter ? 'quarantined' : 'degraded';
  return { ...h, status, reason, bad, good: 0, goodSince: null, since: status === h.status ? h.since : signal.at };
}

/** The mark after setting (`on`) or clearing `scope`; null once no scope holds it. */
export function nextMark(m: MaintenanceMark | null, scope: MaintenanceScope, on: boolean, at: number): MaintenanceMark | null {
  const next: MaintenanceMark = { device: m?.device ?? false, host: m?.host ?? false, since: m?.since ?? at };
  next[scope] = on;
  return next.device || next.host ? next : null;
}
