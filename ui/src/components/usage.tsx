import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, describeError } from '../api.js';
import { session } from '../auth.js';
import type { HostUsage, UsageSample } from '../types.js';

/** How often the panels re-read the conductor's window: about the agents' telemetry pace. */
const REFRESH_MS = 5_000;

/** Polls `load` while the panel is open; a 404 (no such device any more) is not retried. */
function usePolled<T>(key: string, load: () => Promise<T>): { data: T | null; error: string } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = (): void => {
      load().then(
        (d) => {
          if (!live) return;
          setData(d);
          setError('');
          timer = setTimeout(tick, REFRESH_MS);
        },
        (err: unknown) => {
          if (!live) return;
          setError(describeError(err));
          if (!(err instanceof ApiError && err.status === 404)) timer = setTimeout(tick, REFRESH_MS);
        },
      );
    };
    setData(null);
    tick();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [key]);
  return { data, error };
}

interface Series {
  key: string;
  label: string;
  unit: string;
  values: number[];
  /** The chart's top: a fixed scale where the quantity has one (percent, the card's memory). */
  max: number;
}

/** The quantities a driver may measure, each drawn only when some sample carries it. */
function seriesOf(samples: UsageSample[]): Series[] {
  const pick = (f: (s: UsageSample) => number | undefined): number[] =>
    samples.flatMap((s) => {
      const v = f(s);
      return v === undefined ? [] : [v];
    });
  const memTotal = Math.max(0, ...pick((s) => s.memoryTotalMiB));
  const out: Series[] = [
    { key: 'utilization', label: 'utilisation', unit: '%', values: pick((s) => s.utilization), max: 100 },
    { key: 'memory', label: 'memory', unit: 'MiB', values: pick((s) => s.memoryUsedMiB), max: memTotal },
    { key: 'temperature', label: 'temperature', unit: '°C', values: pick((s) => s.temperatureC), max: 0 },
    { key: 'power', label: 'power', unit: 'W', values: pick((s) => s.powerW), max: 0 },
  ];
  return out.filter((s) => s.values.length > 0);
}

/** A small line chart of one quantity, newest on the right, with its latest value. */
export function Sparkline({ s }: { s: Series }) {
  const top = Math.max(s.max, ...s.values, 1);
  const n = s.values.length;
  const points = s.values.map((v, i) => `${n === 1 ? 50 : (i / (n - 1)) * 100},${30 - (v / top) * 28}`).join(' ');
  const now = s.values[n - 1]!;
  return (
    <div class="spark" data-series={s.key} data-samples={n}>
      <span class="muted">{s.label}</span>
      <svg viewBox="0 0 100 30" preserveAspectRatio="none" role="img" aria-label={`${s.label} over the last ${n} samples`}>
        <polyline points={points} />
      </svg>
      <span class="now">
        {Number.isInteger(now) ? now : now.toFixed(1)} {s.unit}
      </span>
    </div>
  );
}

/**
 * Past this age the latest sample no longer says how the card is now (a lost host, a pulled card,
 * telemetry stopped): the charts are greyed and say how old they are.
 */
export const STALE_AFTER_MS = 60_000;

/** `12 s`, `4 min`, `3 h`: how long ago, as an operator reads it. */
export function ageText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7_200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3_600)} h`;
}

function Charts({ samples, empty }: { samples: UsageSample[]; empty: string }) {
  const series = seriesOf(samples);
  if (series.length === 0) return <p class="muted">{empty}</p>;
  const latest = Date.parse(samples.at(-1)!.at);
  const age = Date.now() - latest;
  const stale = age > STALE_AFTER_MS;
  return (
    <div class={stale ? 'charts stale' : 'charts'} data-stale={stale ? 'true' : 'false'}>
      <p class={stale ? 'age warn' : 'age muted'} data-testid="usage-age" title={new Date(latest).toISOString()}>
        {stale ? `stale: the latest sample is ${ageText(age)} old — not how the card is now` : `latest sample ${ageText(age)} ago`}
      </p>
      {series.map((s) => (
        <Sparkline key={s.key} s={s} />
      ))}
    </div>
  );
}

/** One accelerator's recent usage from the conductor's window (never stored: the agent spec). */
export function AcceleratorUsagePanel({ id }: { id: string }) {
  return session.may('cyborg:operator:usage:get') ? <AcceleratorUsageCharts id={id} /> : null;
}

function AcceleratorUsageCharts({ id }: { id: string }) {
  const { data, error } = usePolled(`acc:${id}`, () => api.usage(id));
  return (
    <section data-testid="usage">
      <h3>Usage {data && <span class="muted">· last {data.samples.length} samples</span>}</h3>
      {error && <p class="error">{error}</p>}
      {data && <Charts samples={data.samples} empty="no usage reported yet (the driver measures none, or telemetry is off)" />}
    </section>
  );
}

/**
 * A host's accelerators summed up per telemetry tick: mean utilisation, memory and power summed,
 * the hottest temperature. Samples of one tick carry the same second.
 */
export function hostSeries(usage: HostUsage): UsageSample[] {
  const ticks = new Map<string, { n: number; u: number; un: number; mem: number; memTotal: number; t?: number; p?: number }>();
  for (const d of usage.devices) {
    for (const s of d.samples) {
      const at = s.at.slice(0, 19);
      const t = ticks.get(at) ?? { n: 0, u: 0, un: 0, mem: 0, memTotal: 0 };
      t.n++;
      if (s.utilization !== undefined) {
        t.u += s.utilization;
        t.un++;
      }
      t.mem += s.memoryUsedMiB ?? 0;
      t.memTotal += s.memoryTotalMiB ?? 0;
      if (s.temperatureC !== undefined) t.t = Math.max(t.t ?? -Infinity, s.temperatureC);
      if (s.powerW !== undefined) t.p = (t.p ?? 0) + s.powerW;
      ticks.set(at, t);
    }
  }
  return [...ticks.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([at, t]) => ({
      at,
      ...(t.un > 0 ? { utilization: t.u / t.un } : {}),
      ...(t.memTotal > 0 ? { memoryUsedMiB: t.mem, memoryTotalMiB: t.memTotal } : {}),
      ...(t.t !== undefined ? { temperatureC: t.t } : {}),
      ...(t.p !== undefined ? { powerW: t.p } : {}),
    }));
}

/** A host's usage, all its devices together. */
export function HostUsagePanel({ host }: { host: string }) {
  return session.may('cyborg:operator:usage:get') ? <HostUsageCharts host={host} /> : null;
}

function HostUsageCharts({ host }: { host: string }) {
  const { data, error } = usePolled(`host:${host}`, () => api.hostUsage(host));
  return (
    <div data-testid="host-usage">
      {error && <p class="error">{error}</p>}
      {data && <Charts samples={hostSeries(data)} empty="no usage reported by this host's devices yet" />}
      {data && data.devices.length > 0 && <p class="muted">{data.devices.length} device(s) reporting</p>}
    </div>
  );
}
