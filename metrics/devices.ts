import { Counter, Gauge, type Registry } from 'prom-client';
import type { AcceleratorView, FleetSource, UsageSample } from '../model/index.js';
import { AcceleratorStates } from '../machines/index.js';

export interface DeviceSeriesOptions {
  /**
   * Label allocations with the consumer's instance and project (`[conductor]
   * metrics_consumer_labels`). Off by default: `/metrics` answers anyone who can reach it, and
   * which project runs which instance where is a tenant's business.
   */
  consumerLabels?: boolean;
  /**
   * Keystone's name of a project as known now (`KeystoneDirectory.cachedProjectName`): the
   * allocation series' `project_name`, empty while unknown. Synchronous on purpose: a scrape
   * never waits on Keystone, a name missed now is there at a later scrape.
   */
  projectName?: (projectId: string) => string | undefined;
}

// `accelerator` is the uuid (stable, what the API takes); `name` the card as its host names it
// (`gpu-0000:3b:00.0`), so an alert and a dashboard say which card without a look-up.
type DeviceLabel = 'host' | 'accelerator' | 'name' | 'state';
const DEVICE_LABELS: DeviceLabel[] = ['host', 'accelerator', 'name', 'state'];
type AllocationLabel = 'host' | 'accelerator' | 'name' | 'instance' | 'project' | 'project_name';
const ALLOCATION_LABELS: AllocationLabel[] = ['host', 'accelerator', 'name', 'instance', 'project', 'project_name'];

/** A latest sample older than this is not exported: the device stopped reporting, the value is not now. */
export const USAGE_FRESH_MS = 5 * 60_000;

/** One accelerator as the device series see it: its host's liveness beside its committed view. */
export interface DeviceRow {
  labels: Record<DeviceLabel, string>;
  view: AcceleratorView;
  hostState: string;
}

/**
 * One walk of the fleet per scrape, shared by every gauge that collects in it; a committed
 * transition (a state, a consumer, a device gone) makes the next scrape walk again. Removed
 * devices are not in it: a card pulled from its host leaves no series behind.
 */
export function fleetRows(conductor: FleetSource): { rows: (now?: number) => DeviceRow[]; stop: () => void } {
  let cached: { at: number; rows: DeviceRow[] } | undefined;
  const stop = conductor.hub.subscribe(() => {
    cached = undefined;
  });
  const rows = (now = Date.now()): DeviceRow[] => {
    if (cached && now - cached.at < 1_000) return cached.rows;
    const out: DeviceRow[] = [];
    for (const h of conductor.hosts.values()) {
      for (const a of h.accelerators.values()) {
        const view = a.view();
        if (view.state === AcceleratorStates.removed) continue;
        out.push({ view, hostState: h.state, labels: { host: h.name, accelerator: view.id, name: view.name, state: view.state } });
      }
    }
    cached = { at: now, rows: out };
    return out;
  };
  return { rows, stop };
}

/**
 * The device-level series: exactly one per accelerator, whatever number of instances share it,
 * so `sum()` over the fleet counts each card once (a card's power is not tripled by its three
 * consumers). Who holds it is a series of its own, one per allocation
 * (`cyborg_accelerator_allocation`), exported only where consumer labels are enabled;
 * `cyborg_accelerator_consumers` counts them on the device's own series either way.
 */
export function deviceGauges(conductor: FleetSource, rows: (now?: number) => DeviceRow[], registers: Registry[], opts: DeviceSeriesOptions): void {
  new Gauge<DeviceLabel>({
    name: 'cyborg_accelerator_consumers',
    help: 'Instances an accelerator is allocated to now (0: free)',
    labelNames: DEVICE_LABELS,
    registers,
    collect() {
      this.reset();
      for (const r of rows()) this.set(r.labels, r.view.allocations.length);
    },
  });
  new Gauge<DeviceLabel>({
    name: 'cyborg_accelerator_capacity',
    help: 'Instances an accelerator can be allocated to at once (its attach handles)',
    labelNames: DEVICE_LABELS,
    registers,
    collect() {
      this.reset();
      for (const r of rows()) this.set(r.labels, r.view.capacity);
    },
  });
  if (opts.consumerLabels) allocationGauge(rows, registers, opts.projectName);
  usageGauges(conductor, rows, registers);
}

/**
 * One series per allocation, with its instance and project. `project_name` is there only where
 * names are looked up (keystone mode): empty while Keystone's answer is not in yet, absent in
 * noauth (no directory to ask), so a noauth deployment's series are what they were.
 */
function allocationGauge(rows: (now?: number) => DeviceRow[], registers: Registry[], projectName: DeviceSeriesOptions['projectName']): void {
  new Gauge<AllocationLabel>({
    name: 'cyborg_accelerator_allocation',
    help: "1 for each instance an accelerator is allocated to, labelled with the instance and its project (its id, and Keystone's name where known)",
    labelNames: projectName ? ALLOCATION_LABELS : ALLOCATION_LABELS.filter((l) => l !== 'project_name'),
    registers,
    collect() {
      this.reset();
      for (const r of rows()) {
        for (const c of r.view.allocations) {
          const project = c.projectId ?? '';
          const { host, accelerator, name } = r.labels;
          const labels: Partial<Record<AllocationLabel, string>> = { host, accelerator, name, instance: c.instanceUuid, project };
          if (projectName) labels.project_name = (project && projectName(project)) || '';
          this.set(labels, 1);
        }
      }
    },
  });
}

/** The latest usage sample of each accelerator (fresh ones only), and the usage windows' own counts. */
function usageGauges(conductor: FleetSource, rows: (now?: number) => DeviceRow[], registers: Registry[]): void {
  const MIB = 1024 * 1024;
  const sampled: [string, string, (s: UsageSample) => number | undefined][] = [
    [
      'cyborg_accelerator_utilization_ratio',
      'Latest utilisation (0..1) the driver measured',
      (s) => (s.utilization === undefined ? undefined : s.utilization / 100),
    ],
    ['cyborg_accelerator_memory_used_bytes', 'Latest device memory in use', (s) => (s.memoryUsedMiB === undefined ? undefined : s.memoryUsedMiB * MIB)],
    ['cyborg_accelerator_memory_total_bytes', 'Device memory the driver reports', (s) => (s.memoryTotalMiB === undefined ? undefined : s.memoryTotalMiB * MIB)],
    ['cyborg_accelerator_temperature_celsius', 'Latest temperature', (s) => s.temperatureC],
    ['cyborg_accelerator_power_watts', 'Latest power draw', (s) => s.powerW],
  ];
  for (const [name, help, pick] of sampled) {
    new Gauge<DeviceLabel>({
      name,
      help,
      labelNames: DEVICE_LABELS,
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        for (const r of rows(now)) {
          const latest = conductor.usage.latest(r.view.id);
          const x = latest && now - Date.parse(latest.at) <= USAGE_FRESH_MS ? pick(latest) : undefined;
          if (x !== undefined) this.set(r.labels, x);
        }
      },
    });
  }
  const { stats } = conductor.usage;
  // A counter read from the window's running totals at scrape time.
  new Counter<'outcome'>({
    name: 'cyborg_usage_samples_total',
    help: 'Usage samples received since start: recorded (clamped ones included), clamped, unknown_device (not held here, or removed), invalid (unusable or out of order)',
    labelNames: ['outcome'],
    registers,
    collect() {
      this.reset();
      this.inc({ outcome: 'recorded' }, stats.recorded);
      this.inc({ outcome: 'clamped' }, stats.clamped);
      this.inc({ outcome: 'unknown_device' }, stats.unknownDevice);
      this.inc({ outcome: 'invalid' }, stats.invalid);
    },
  });
  new Gauge({
    name: 'cyborg_usage_window_bytes',
    help: 'Memory the usage windows take: a fixed amount per accelerator with samples',
    registers,
    collect() {
      this.set(conductor.usage.bytes);
    },
  });
}
