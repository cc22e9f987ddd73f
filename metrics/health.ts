import { Counter, Gauge, type Registry } from 'prom-client';
import type { AcceleratorView, CommittedEvent, FleetSource } from '../model/index.js';
import type { DeviceRow } from './devices.js';
import { HostStates } from '../machines/index.js';

/**
 * The series an operator alerts on (deploy/prometheus/cyborg-alerts.yml): each device's health
 * and maintenance mark, each host's liveness and drain, and health changes as counters. Gauges
 * are one series per device or host, read at scrape time from the committed views; a host
 * deleted or a device removed leaves none behind.
 */

/** Where a health reason comes from, for a label whose values stay few: never the free text. */
export function reasonClass(reason: string | null): string {
  if (!reason) return 'none';
  if (/^Xid \d+/.test(reason)) return 'xid';
  if (/no longer reports this device/.test(reason)) return 'missing';
  // Its driver's discovery could not observe it (nvidia-smi failing, say): status `unknown`.
  if (/^not observed: /.test(reason)) return 'unobserved';
  return 'driver';
}

/**
 * A device's health as an alert reads it: `unknown` while its host is not online (its agent
 * cannot check it: the last verdict is not now), else the committed status.
 */
export function healthLabels(view: AcceleratorView, hostState: string): { status: string; severity: string; reason_class: string } {
  const h = view.health;
  const status = hostState === HostStates.online ? (h?.status ?? 'ok') : 'unknown';
  const bad = h && h.status !== 'ok';
  // Not observed is no fault of the device: a severity only for a fatal fault it had before.
  const severity = !bad ? 'none' : h.fatal ? 'fatal' : h.status === 'unknown' ? 'none' : 'transient';
  return { status, severity, reason_class: reasonClass(bad ? h.reason : null) };
}

export const HEALTH_CHANGES = ['DEGRADED', 'QUARANTINED', 'RECOVERED'] as const;

export function healthGauges(conductor: FleetSource, rows: (now?: number) => DeviceRow[], registers: Registry[]): () => void {
  new Gauge<'host' | 'accelerator' | 'name' | 'status' | 'severity' | 'reason_class'>({
    name: 'cyborg_accelerator_health',
    help: "1 on the series naming each accelerator's health: status ok, degraded, quarantined or unknown (host not online, or its driver could not observe it: reason_class unobserved), severity, reason_class (xid, driver, missing, unobserved, none)",
    labelNames: ['host', 'accelerator', 'name', 'status', 'severity', 'reason_class'],
    registers,
    collect() {
      this.reset();
      for (const r of rows())
        this.set({ host: r.labels.host, accelerator: r.labels.accelerator, name: r.labels.name, ...healthLabels(r.view, r.hostState) }, 1);
    },
  });
  new Gauge<'host' | 'accelerator' | 'name' | 'mark'>({
    name: 'cyborg_accelerator_maintenance',
    help: '1 while an accelerator is out of service for maintenance (mark: maintenance, or draining while instances remain), else 0 with mark none',
    labelNames: ['host', 'accelerator', 'name', 'mark'],
    registers,
    collect() {
      this.reset();
      for (const r of rows()) {
        const m = r.view.maintenance;
        this.set({ host: r.labels.host, accelerator: r.labels.accelerator, name: r.labels.name, mark: m?.mark ?? 'none' }, m ? 1 : 0);
      }
    },
  });
  new Gauge<'host' | 'state'>({
    name: 'cyborg_host_state',
    help: "1 on the series naming each host's agent liveness (online, stale, lost)",
    labelNames: ['host', 'state'],
    registers,
    collect() {
      this.reset();
      for (const h of conductor.hosts.values()) this.set({ host: h.name, state: h.state }, 1);
    },
  });
  new Gauge<'host'>({
    name: 'cyborg_host_drain_started_timestamp_seconds',
    help: 'When the drain of a host began (present only while it is drained)',
    labelNames: ['host'],
    registers,
    collect() {
      this.reset();
      for (const h of conductor.hosts.values()) {
        const since = h.drainedSince();
        if (since !== undefined) this.set({ host: h.name }, since / 1000);
      }
    },
  });
  new Gauge<'host'>({
    name: 'cyborg_host_drain_consumers',
    help: "Instances still on a drained host's accelerators (present only while it is drained; 0: the drain is done)",
    labelNames: ['host'],
    registers,
    collect() {
      this.reset();
      const held = new Map<string, number>();
      for (const r of rows()) {
        if (!r.view.maintenance?.scopes.includes('host')) continue;
        held.set(r.labels.host, (held.get(r.labels.host) ?? 0) + r.view.allocations.length);
      }
      for (const [host, n] of held) this.set({ host }, n);
    },
  });
  const changes = new Counter<'change' | 'severity'>({
    name: 'cyborg_accelerator_health_changes_total',
    help: 'Health changes this conductor committed: degraded, quarantined (by severity), recovered',
    labelNames: ['change', 'severity'],
    registers,
  });
  // Zero from the start: `increase()` sees the first quarantine, not a series appearing at 1.
  for (const change of ['degraded', 'quarantined']) for (const severity of ['transient', 'fatal']) changes.inc({ change, severity }, 0);
  changes.inc({ change: 'recovered', severity: 'none' }, 0);
  return conductor.hub.subscribe((ev) => {
    const change = ev.kind === 'accelerator' ? healthChangeOf(ev) : null;
    if (!change) return;
    const severity = change === 'RECOVERED' ? 'none' : String(ev.args?.severity ?? 'transient');
    changes.inc({ change: change.toLowerCase(), severity });
  });
}

/**
 * The health change a committed transition made: a `DEGRADED`, `QUARANTINED` or `RECOVERED` row,
 * or a change of state that cleared a bad health on its way (an operator's reset: its
 * `resetting → ready` row says `health: quarantined→ok`), a recovery as much as a clear-health is.
 */
export function healthChangeOf(ev: Pick<CommittedEvent, 'event' | 'args'>): (typeof HEALTH_CHANGES)[number] | null {
  if ((HEALTH_CHANGES as readonly string[]).includes(ev.event)) return ev.event as (typeof HEALTH_CHANGES)[number];
  return /→ok$/.test(String(ev.args?.health ?? '')) ? 'RECOVERED' : null;
}
