import type { UsageSample, UsageStats } from '../../model/index.js';

/** One measurement as the agent sends it (bus/schemas.ts TelemetryMessage): typed, not yet trusted. */
export interface RawUsage {
  utilization: number;
  memoryUsedBytes?: number | undefined;
  memoryTotalBytes?: number | undefined;
  temperatureC?: number | undefined;
  powerW?: number | undefined;
}

const FIELDS = 5;
const MIB = 1024 * 1024;
/** The largest device memory believed (1 PiB, in MiB): anything above is a unit mistake. */
const MAX_MIB = 1024 ** 3;
/** Temperature a sensor can report: below is a broken sensor, above a molten card. */
const TEMP_C: readonly [number, number] = [-40, 150];
/** Power of the largest accelerator boards with headroom (watts). */
const MAX_POWER_W = 5_000;
/** An agent clock this far from the conductor's is not believed: the sample is dated on receipt. */
const MAX_SKEW_MS = 5 * 60_000;

/** Bytes one ring of `size` samples takes in its typed arrays (the fixed cost per device). */
export const ringBytes = (size: number): number => size * (8 + FIELDS * 4);

/**
 * The last `size` samples of one accelerator in typed arrays, allocated once: a fixed cost per
 * device whatever the rate it reports at. A missing field is NaN.
 */
class Ring {
  private readonly at: Float64Array;
  private readonly values: Float32Array;
  private next = 0;
  private count = 0;

  constructor(private readonly size: number) {
    this.at = new Float64Array(size);
    this.values = new Float32Array(size * FIELDS);
  }

  get latestAt(): number {
    return this.count === 0 ? Number.NEGATIVE_INFINITY : this.at[(this.next - 1 + this.size) % this.size]!;
  }

  push(at: number, v: readonly number[]): void {
    this.at[this.next] = at;
    this.values.set(v, this.next * FIELDS);
    this.next = (this.next + 1) % this.size;
    this.count = Math.min(this.count + 1, this.size);
  }

  /** Oldest first. */
  samples(): UsageSample[] {
    const out: UsageSample[] = [];
    for (let k = this.count; k > 0; k--) out.push(this.sampleAt((this.next - k + this.size) % this.size));
    return out;
  }

  latest(): UsageSample | undefined {
    return this.count === 0 ? undefined : this.sampleAt((this.next - 1 + this.size) % this.size);
  }

  private sampleAt(i: number): UsageSample {
    const v = (f: number): number | undefined => {
      const x = this.values[i * FIELDS + f]!;
      return Number.isNaN(x) ? undefined : Math.round(x * 100) / 100;
    };
    const s: UsageSample = { at: new Date(this.at[i]!).toISOString() };
    const [utilization, memoryUsedMiB, memoryTotalMiB, temperatureC, powerW] = [v(0), v(1), v(2), v(3), v(4)];
    if (utilization !== undefined) s.utilization = utilization;
    if (memoryUsedMiB !== undefined) s.memoryUsedMiB = memoryUsedMiB;
    if (memoryTotalMiB !== undefined) s.memoryTotalMiB = memoryTotalMiB;
    if (temperatureC !== undefined) s.temperatureC = temperatureC;
    if (powerW !== undefined) s.powerW = powerW;
    return s;
  }
}

/**
 * A sample's values within what a device can measure, in the window's units (percent, MiB, °C, W):
 * NaN where absent or not a finite number; `clamped` when one had to be brought within bounds.
 */
export function normalize(u: RawUsage): { values: number[]; clamped: boolean } | undefined {
  if (!Number.isFinite(u.utilization)) return undefined;
  let clamped = false;
  const within = (x: number | undefined, lo: number, hi: number): number => {
    if (x === undefined || !Number.isFinite(x)) return Number.NaN;
    const y = Math.min(hi, Math.max(lo, x));
    if (y !== x) clamped = true;
    return y;
  };
  // Drivers report utilisation as a fraction (0..1); the window keeps percent.
  const utilization = within(u.utilization * 100, 0, 100);
  const total = within(u.memoryTotalBytes === undefined ? undefined : u.memoryTotalBytes / MIB, 0, MAX_MIB);
  // Never more in use than there is, where the total is known.
  const used = within(u.memoryUsedBytes === undefined ? undefined : u.memoryUsedBytes / MIB, 0, Number.isNaN(total) ? MAX_MIB : total);
  return { values: [utilization, used, total, within(u.temperatureC, ...TEMP_C), within(u.powerW, 0, MAX_POWER_W)], clamped };
}

/**
 * Recent usage per accelerator, in memory only and bounded: `size` samples for each accelerator
 * that reports, values clamped to what a device can measure. Which accelerators may report is the
 * caller's to say (the conductor keeps only those it holds).
 */
export class UsageWindows {
  private readonly rings = new Map<string, Ring>();
  readonly stats: UsageStats = { recorded: 0, clamped: 0, unknownDevice: 0, invalid: 0 };

  constructor(readonly size: number) {}

  /** Keeps one sample measured at `atMs` by the agent's clock, received at `nowMs`; false when refused. */
  record(acceleratorId: string, atMs: number, u: RawUsage, nowMs = Date.now()): boolean {
    if (this.size === 0) return false;
    const sample = normalize(u);
    const believed = Number.isFinite(atMs) && Math.abs(atMs - nowMs) <= MAX_SKEW_MS;
    const at = believed ? atMs : nowMs;
    let ring = this.rings.get(acceleratorId);
    // Older than the latest (a clock stepped back, a delayed message): the window stays in time order.
    if (!sample || (ring && at < ring.latestAt)) {
      this.stats.invalid++;
      return false;
    }
    if (!ring) this.rings.set(acceleratorId, (ring = new Ring(this.size)));
    ring.push(at, sample.values);
    this.stats.recorded++;
    if (sample.clamped || !believed) this.stats.clamped++;
    return true;
  }

  /** A sample refused because its accelerator is not one the caller keeps. */
  unknown(): void {
    this.stats.unknownDevice++;
  }

  samples(acceleratorId: string): UsageSample[] {
    return this.rings.get(acceleratorId)?.samples() ?? [];
  }

  latest(acceleratorId: string): UsageSample | undefined {
    return this.rings.get(acceleratorId)?.latest();
  }

  /** Forgets accelerators for which `keep` says no (removed, or moved to another conductor). */
  prune(keep: (acceleratorId: string) => boolean): void {
    for (const id of this.rings.keys()) if (!keep(id)) this.rings.delete(id);
  }

  forget(acceleratorId: string): void {
    this.rings.delete(acceleratorId);
  }

  /** Accelerators with a window. */
  get devices(): number {
    return this.rings.size;
  }

  /** Memory the samples take (the typed arrays; a fixed amount per device). */
  get bytes(): number {
    return this.rings.size * ringBytes(this.size);
  }
}
