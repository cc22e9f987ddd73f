import { AcceleratorStates } from '../../machines/index.js';
import type { AcceleratorView } from './types.js';

/** What the operator narrowed the list to; empty strings mean "any". */
export interface Filters {
  host: string;
  state: string;
  kind: string;
  project: string;
  /** `ok`, `degraded`, `quarantined` or `unknown` (not observed by its driver) (HEALTHS). */
  health: string;
  /** `in service`, `out of service`, `draining` or `maintenance` (SERVICES). */
  service: string;
  q: string;
}

export const NO_FILTERS: Filters = { host: '', state: '', kind: '', project: '', health: '', service: '', q: '' };

/** Health as the conductor judges it (model/accelerator.ts HealthView), best first. */
export const HEALTHS = ['ok', 'degraded', 'quarantined', 'unknown'] as const;
/**
 * Whether the device takes new binds: in service; out of service with no mark, kept out by its
 * health or its state (quarantined, in error, offline); or marked (draining while held, then
 * maintenance). A quarantined card was counted "in service" (issue 42).
 */
export const SERVICES = ['in service', 'out of service', 'draining', 'maintenance'] as const;

/** Health as the counts read it: a removed device's last verdict is history, not a device to page about. */
export const healthOf = (a: AcceleratorView): string => (a.state === AcceleratorStates.removed ? 'ok' : (a.health?.status ?? 'ok'));
const OUT_OF_SERVICE: readonly string[] = [AcceleratorStates.error, AcceleratorStates.offline];
export const serviceOf = (a: AcceleratorView): string =>
  a.maintenance?.mark ?? (healthOf(a) === 'quarantined' || OUT_OF_SERVICE.includes(a.state) ? 'out of service' : 'in service');

export type Row = { type: 'group'; state: string; count: number; collapsed: boolean } | { type: 'accelerator'; a: AcceleratorView };

export interface Selection {
  rows: Row[];
  /** Per state, how many match every filter but the state one (the state chips). */
  counts: Map<string, number>;
  /** Per health, how many match every filter but the health one. */
  healthCounts: Map<string, number>;
  /** Per maintenance mark (or `in service`), how many match every filter but that one. */
  serviceCounts: Map<string, number>;
  shown: number;
}

/** The projects holding an accelerator (through its allocations). */
export function projectsOf(a: AcceleratorView): string[] {
  return a.allocations.flatMap((x) => (x.projectId ? [x.projectId] : []));
}

function matchesText(a: AcceleratorView, q: string): boolean {
  if (a.name.toLowerCase().includes(q) || a.id.includes(q) || a.host.toLowerCase().includes(q) || a.model.toLowerCase().includes(q)) return true;
  return a.allocations.some((x) => x.instanceUuid.includes(q) || x.handleUuid.includes(q) || x.arqUuid?.includes(q) === true);
}

function matchesBut(a: AcceleratorView, f: Filters, q: string): boolean {
  if (f.host && a.host !== f.host) return false;
  if (f.kind && a.deviceType !== f.kind) return false;
  if (f.project && !projectsOf(a).includes(f.project)) return false;
  return !q || matchesText(a, q);
}

/** Stable base order (host, then name): rebuilt only when accelerators come or go. */
export function baseOrder(all: Iterable<AcceleratorView>): string[] {
  return [...all].sort((x, y) => (x.host === y.host ? x.name.localeCompare(y.name) : x.host.localeCompare(y.host))).map((a) => a.id);
}

/**
 * The list's rows: accelerators that pass the filters, grouped by state in lifecycle order
 * (`stateOrder`, the machine's own order), each group headed by its count. One pass over the
 * base order, so 10,000 accelerators cost well under a frame.
 */
export function select(order: string[], byId: Map<string, AcceleratorView>, f: Filters, stateOrder: string[], collapsed: Set<string>): Selection {
  const q = f.q.trim().toLowerCase();
  const groups = new Map<string, AcceleratorView[]>();
  const counts = new Map<string, number>();
  const healthCounts = new Map<string, number>();
  const serviceCounts = new Map<string, number>();
  const bump = (m: Map<string, number>, k: string): void => {
    m.set(k, (m.get(k) ?? 0) + 1);
  };
  for (const id of order) {
    const a = byId.get(id);
    if (!a || !matchesBut(a, f, q)) continue;
    // Each chip row counts what every other filter lets through, so a count says what a click shows.
    const health = healthOf(a);
    const service = serviceOf(a);
    const byState = !f.state || a.state === f.state;
    const byHealth = !f.health || health === f.health;
    const byService = !f.service || service === f.service;
    if (byHealth && byService) bump(counts, a.state);
    if (byState && byService) bump(healthCounts, health);
    if (byState && byHealth) bump(serviceCounts, service);
    if (!byState || !byHealth || !byService) continue;
    const g = groups.get(a.state);
    if (g) g.push(a);
    else groups.set(a.state, [a]);
  }
  const states = [...stateOrder.filter((s) => groups.has(s)), ...[...groups.keys()].filter((s) => !stateOrder.includes(s))];
  const rows: Row[] = [];
  let shown = 0;
  for (const s of states) {
    const g = groups.get(s)!;
    const isCollapsed = collapsed.has(s);
    rows.push({ type: 'group', state: s, count: g.length, collapsed: isCollapsed });
    shown += g.length;
    if (!isCollapsed) for (const a of g) rows.push({ type: 'accelerator', a });
  }
  return { rows, counts, healthCounts, serviceCounts, shown };
}

/** What the hosts panel shows of a host beyond its liveness: its drain and its unhealthy devices. */
export interface HostSummary {
  /** `draining` while a device its drain marked is still held, `drained` once none is. */
  drain: 'none' | 'draining' | 'drained';
  /** Devices its drain marked that instances still hold. */
  held: number;
  unhealthy: number;
}

const NO_SUMMARY: HostSummary = { drain: 'none', held: 0, unhealthy: 0 };

/** Per host, its drain and unhealthy devices, from the accelerators' views (one pass). */
export function hostSummaries(all: Iterable<AcceleratorView>): Map<string, HostSummary> {
  const out = new Map<string, HostSummary>();
  for (const a of all) {
    const drained = a.maintenance?.scopes.includes('host') === true;
    const unhealthy = healthOf(a) !== 'ok';
    if (!drained && !unhealthy) continue;
    const s = out.get(a.host) ?? { ...NO_SUMMARY };
    if (unhealthy) s.unhealthy++;
    if (drained) {
      const held = a.maintenance?.mark === 'draining';
      if (held) s.held++;
      s.drain = held || s.drain === 'draining' ? 'draining' : 'drained';
    }
    out.set(a.host, s);
  }
  return out;
}

export const summaryOf = (m: Map<string, HostSummary>, host: string): HostSummary => m.get(host) ?? NO_SUMMARY;
