import { Counter, Gauge, register } from 'prom-client';

/** Anything that can say how far Placement is from the truth right now. */
export interface DriftSource {
  drift(): Record<DriftKind, number>;
}

export type DriftKind = 'pending' | 'error' | 'held' | 'stale';

const sources = new Set<DriftSource>();

function metric<T>(name: string, make: () => T): T {
  return (register.getSingleMetric(name) as T | undefined) ?? make();
}

/**
 * Accelerators whose provider does not (yet) match them — `pending` (not written yet, or
 * Placement down), `error` (cannot be written), `held` (kept for allocations, flagged) — and
 * `stale` Cyborg providers kept because something is allocated on them. Summed over every
 * running PlacementSync of the process, read at scrape time.
 */
export const driftGauge = metric(
  'cyborg_placement_drift',
  () =>
    new Gauge({
      name: 'cyborg_placement_drift',
      help: 'Accelerators whose Placement resource provider does not match their state, by kind (pending, error, held, stale)',
      labelNames: ['kind'] as const,
      collect() {
        const sum: Record<DriftKind, number> = { pending: 0, error: 0, held: 0, stale: 0 };
        for (const s of sources) for (const [k, n] of Object.entries(s.drift())) sum[k as DriftKind] += n;
        for (const [k, n] of Object.entries(sum)) this.set({ kind: k }, n);
      },
    }),
);

export const requestCounter = metric(
  'cyborg_placement_requests_total',
  () =>
    new Counter({
      name: 'cyborg_placement_requests_total',
      help: 'Requests sent to Placement, by method and HTTP status (0: no answer)',
      labelNames: ['method', 'status'] as const,
    }),
);

export const repairCounter = metric(
  'cyborg_placement_repairs_total',
  () =>
    new Counter({
      name: 'cyborg_placement_repairs_total',
      help: 'Providers put right after something outside Cyborg changed them in Placement',
    }),
);

export const passCounter = metric(
  'cyborg_placement_passes_total',
  () =>
    new Counter({
      name: 'cyborg_placement_passes_total',
      help: 'Placement reconcile passes, by kind (full, changes) and result (ok, retry)',
      labelNames: ['kind', 'result'] as const,
    }),
);

/** Counts a running PlacementSync into the drift gauge until the returned function is called. */
export function trackDrift(source: DriftSource): () => void {
  sources.add(source);
  return () => sources.delete(source);
}
