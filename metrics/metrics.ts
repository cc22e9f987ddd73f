import { subscribe } from 'node:diagnostics_channel';
import { collectDefaultMetrics, Counter, Gauge, Histogram, register as globalRegistry, Registry } from 'prom-client';
import type { FleetSource } from '../model/index.js';
import { deviceGauges, fleetRows, type DeviceSeriesOptions } from './devices.js';
import { healthGauges } from './health.js';
import { lifecycleGauges } from './lifecycle.js';
import { HOST_STATES } from '../machines/index.js';

/**
 * Prometheus metrics of one role process (prom-client). Counters and histograms are fed as things
 * happen; gauges about the actor tree are computed at scrape time from the conductor's committed
 * views, so they cost nothing between scrapes.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly busErrors: Counter<'reason'>;
  readonly transitions: Counter<'kind' | 'to'>;
  readonly flushSize: Histogram;
  readonly flushSeconds: Histogram;
  readonly heartbeatLag: Histogram;
  /** Exact recent heartbeat lags (the STATS responder and the fleet bench read percentiles here). */
  readonly lagWindow = new Window(20_000);

  constructor(readonly role: string) {
    this.registry.setDefaultLabels({ role });
    collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    this.busErrors = new Counter({ name: 'cyborg_bus_errors_total', help: 'Bus messages dropped or failed, by reason', labelNames: ['reason'], registers });
    this.transitions = new Counter({
      name: 'cyborg_transitions_total',
      help: 'Committed transitions, by kind and target state',
      labelNames: ['kind', 'to'],
      registers,
    });
    this.flushSize = new Histogram({
      name: 'cyborg_journal_flush_changes',
      help: 'Changes per journal flush',
      registers,
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
    });
    this.flushSeconds = new Histogram({
      name: 'cyborg_journal_flush_seconds',
      help: 'Journal flush latency',
      registers,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    });
    // config/logger.ts publishes each line a blocked log destination made it drop (its LOG_DROPPED_CHANNEL).
    const logDropped = new Counter({
      name: 'cyborg_log_lines_dropped_total',
      help: 'Log lines dropped because the log destination did not take them',
      registers,
    });
    subscribe('cyborg:log.dropped', (m) => logDropped.inc((m as { lines: number }).lines));
    this.heartbeatLag = new Histogram({
      name: 'cyborg_heartbeat_lag_seconds',
      help: 'From an agent sending a heartbeat to its conductor processing it',
      registers,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    });
  }

  /** The hook a journal calls after each flush. */
  observeFlush(changes: number, seconds: number): void {
    this.flushSize.observe(changes);
    this.flushSeconds.observe(seconds);
  }

  observeHeartbeat(sentAtMs: number, now = Date.now()): void {
    const lag = Math.max(0, now - sentAtMs);
    this.heartbeatLag.observe(lag / 1000);
    this.lagWindow.push(lag);
  }

  /**
   * Gauges over a conductor's committed fleet (per device, per host, fleet counts), health-change
   * and transition counters fed by its event hub. The conductor is taken as the model's
   * `FleetSource`, never as its class. See docs/metrics.md for every series.
   */
  watchConductor(conductor: FleetSource, opts: DeviceSeriesOptions = {}): () => void {
    const registers = [this.registry];
    new Gauge({
      name: 'cyborg_accelerators',
      help: 'Accelerators by committed state and host',
      labelNames: ['state', 'host'],
      registers,
      collect() {
        this.reset();
        for (const h of conductor.hosts.values()) {
          const counts = new Map<string, number>();
          for (const a of h.accelerators.values()) {
            const s = a.view().state;
            counts.set(s, (counts.get(s) ?? 0) + 1);
          }
          for (const [state, n] of counts) this.set({ state, host: h.name }, n);
        }
      },
    });
    new Gauge({
      name: 'cyborg_hosts',
      help: 'Hosts by agent liveness (online, stale, lost)',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        const counts = new Map<string, number>(HOST_STATES.map((s) => [s, 0]));
        for (const h of conductor.hosts.values()) counts.set(h.state, (counts.get(h.state) ?? 0) + 1);
        for (const [state, n] of counts) this.set({ state }, n);
      },
    });
    const fleet = fleetRows(conductor);
    deviceGauges(conductor, fleet.rows, registers, opts);
    const unwatchHealth = healthGauges(conductor, fleet.rows, registers);
    const unwatchLifecycle = lifecycleGauges(conductor, fleet.rows, registers);
    const unwatch = conductor.hub.subscribe((ev) => this.transitions.inc({ kind: ev.kind, to: ev.to }));
    return () => {
      unwatch();
      unwatchHealth();
      unwatchLifecycle();
      fleet.stop();
    };
  }

  /** Exposes a live object of running totals (e.g. a journal's `stats`) as gauges read at scrape time. */
  exposeCounters(prefix: string, totals: Record<string, number>): void {
    for (const key of Object.keys(totals)) {
      const name = `${prefix}_${key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`;
      new Gauge({
        name,
        help: `${prefix} ${key} since start`,
        registers: [this.registry],
        collect() {
          this.set(totals[key] ?? 0);
        },
      });
    }
  }

  /** This role's metrics plus those modules keep on prom-client's global registry (Placement sync's drift). */
  async text(): Promise<string> {
    // Concatenated, not Registry.merge(): merging drops this registry's default `role` label.
    return `${await this.registry.metrics()}\n${await globalRegistry.metrics()}`;
  }
}

/** A ring of the last `size` samples, for exact percentiles over a recent window. */
export class Window {
  private buf: number[] = [];
  private i = 0;
  count = 0;

  constructor(private readonly size: number) {}

  push(v: number): void {
    this.count++;
    if (this.buf.length < this.size) this.buf.push(v);
    else this.buf[this.i++ % this.size] = v;
  }

  percentile(p: number): number | null {
    if (this.buf.length === 0) return null;
    const sorted = [...this.buf].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
  }

  reset(): void {
    this.buf = [];
    this.i = 0;
  }
}

/** Feeds the flush histograms from a journal that reports its flushes (the PostgreSQL one does). */
export function watchFlushes(metrics: Metrics, journal: object): void {
  if ('onFlush' in journal) {
    (journal as { onFlush?: (changes: number, seconds: number) => void }).onFlush = (n, s) => metrics.observeFlush(n, s);
  }
}
