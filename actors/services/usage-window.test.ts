import { describe, expect, it } from 'vitest';
import { ringBytes, UsageWindows } from './usage-window.js';

const GiB = 1024 ** 3;
const T0 = Date.parse('2026-11-24T10:00:00Z');

describe('usage windows', () => {
  it('keep the last samples of each device, oldest first, in the units the API shows', () => {
    const w = new UsageWindows(3);
    for (let i = 0; i < 5; i++)
      w.record('gpu-1', T0 + i * 5_000, { utilization: i / 10, memoryUsedBytes: 2 * GiB, memoryTotalBytes: 16 * GiB, temperatureC: 50 + i, powerW: 100 }, T0);
    expect(w.samples('gpu-1')).toEqual([
      { at: '2026-11-24T10:00:10.000Z', utilization: 20, memoryUsedMiB: 2048, memoryTotalMiB: 16_384, temperatureC: 52, powerW: 100 },
      { at: '2026-11-24T10:00:15.000Z', utilization: 30, memoryUsedMiB: 2048, memoryTotalMiB: 16_384, temperatureC: 53, powerW: 100 },
      { at: '2026-11-24T10:00:20.000Z', utilization: 40, memoryUsedMiB: 2048, memoryTotalMiB: 16_384, temperatureC: 54, powerW: 100 },
    ]);
    expect(w.latest('gpu-1')?.utilization).toBe(40);
    expect(w.samples('nic-vf-1')).toEqual([]);
  });

  it('leaves out what the driver does not measure', () => {
    const w = new UsageWindows(4);
    w.record('vf-1', T0, { utilization: 0.25 }, T0);
    expect(w.samples('vf-1')).toEqual([{ at: new Date(T0).toISOString(), utilization: 25 }]);
  });

  it('clamps values no device measures, and counts them', () => {
    const w = new UsageWindows(4);
    // A driver reporting percent instead of a fraction, memory in use beyond the card's, a broken sensor.
    w.record('gpu-1', T0, { utilization: 87, memoryUsedBytes: 40 * GiB, memoryTotalBytes: 16 * GiB, temperatureC: 9_999, powerW: -5 }, T0);
    expect(w.latest('gpu-1')).toEqual({
      at: new Date(T0).toISOString(),
      utilization: 100,
      memoryUsedMiB: 16_384,
      memoryTotalMiB: 16_384,
      temperatureC: 150,
      powerW: 0,
    });
    expect(w.stats).toMatchObject({ recorded: 1, clamped: 1, invalid: 0 });
  });

  it('refuses unusable samples and ones older than the latest; dates a wild clock on receipt', () => {
    const w = new UsageWindows(4);
    expect(w.record('gpu-1', T0, { utilization: Number.NaN }, T0)).toBe(false);
    expect(w.record('gpu-1', T0, { utilization: 0.5, temperatureC: Number.POSITIVE_INFINITY }, T0)).toBe(true);
    expect(w.latest('gpu-1')).toEqual({ at: new Date(T0).toISOString(), utilization: 50 });
    expect(w.record('gpu-1', T0 - 1_000, { utilization: 0.1 }, T0)).toBe(false);
    // An agent whose clock is a year ahead: kept, at the time it arrived.
    expect(w.record('gpu-1', T0 + 365 * 86_400_000, { utilization: 0.2 }, T0 + 5_000)).toBe(true);
    expect(w.latest('gpu-1')?.at).toBe(new Date(T0 + 5_000).toISOString());
    expect(w.stats).toEqual({ recorded: 2, clamped: 1, unknownDevice: 0, invalid: 2 });
  });

  it('costs a fixed amount per device whatever the rate: a 10 Hz flood for an hour takes no more', () => {
    const w = new UsageWindows(60);
    const devices = Array.from({ length: 100 }, (_, i) => `dev-${i}`);
    for (const d of devices) w.record(d, T0, { utilization: 0.1 }, T0);
    const after1 = w.bytes;
    expect(after1).toBe(100 * ringBytes(60));
    for (let tick = 1; tick <= 36_000; tick++) w.record(devices[tick % 100]!, T0 + tick * 100, { utilization: 0.5, powerW: 200 }, T0 + tick * 100);
    expect(w.bytes).toBe(after1);
    expect(w.samples('dev-7')).toHaveLength(60);
  });

  it('forgets devices it is told to, and keeps nothing with a window of 0', () => {
    const w = new UsageWindows(4);
    w.record('a', T0, { utilization: 0 }, T0);
    w.record('b', T0, { utilization: 0 }, T0);
    w.prune((id) => id === 'b');
    expect([w.samples('a'), w.devices]).toEqual([[], 1]);
    const none = new UsageWindows(0);
    expect(none.record('a', T0, { utilization: 0 }, T0)).toBe(false);
    expect(none.bytes).toBe(0);
  });
});
