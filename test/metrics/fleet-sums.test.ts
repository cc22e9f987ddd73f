import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../../metrics/index.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';
import { parseProm, select } from './prom-text.js';

/**
 * Dashboards sum the device series over the fleet: three instances on one FPGA must not triple
 * its power. And /metrics answers anyone who can reach it, so which project runs which instance
 * is there only where the operator enabled it (`[conductor] metrics_consumer_labels`).
 */
describe('metrics that add up', () => {
  let s: Stack;
  const vms = ['vm-a', 'vm-b', 'vm-c'];

  beforeAll(async () => {
    s = await startStack({ hosts: ['compute-1', 'compute-2'], fake: { gpus: 2 }, agent: { telemetryIntervalMs: 0, healthIntervalMs: 0 } });
    const fpga = s.conductor.listAccelerators({ host: 'compute-1', type: 'FPGA' })[0]!;
    await s.conductor.act(fpga.id, { type: 'ENABLE' });
    for (const vm of vms) await s.conductor.attach(fpga.id, { instanceUuid: vm, projectId: 'p-red' });
    const gpu = s.conductor.listAccelerators({ host: 'compute-2', type: 'GPU' })[0]!;
    await s.conductor.act(gpu.id, { type: 'ENABLE' });
    await s.conductor.attach(gpu.id, { instanceUuid: 'vm-d', projectId: 'p-blue' });
    for (const a of s.agents) await a.telemetry();
    await eventually(() => s.conductor.listAccelerators().every((a) => s.conductor.usage.latest(a.id) !== undefined), { what: "every device's first sample" });
  });
  afterAll(async () => {
    await s?.stop();
  });

  const scrapeWith = async (consumerLabels: boolean) => {
    const m = new Metrics('conductor');
    m.watchConductor(s.conductor, { consumerLabels });
    return parseProm(await m.text());
  };

  it("has one series per device, so a sum over the fleet is the devices' own sum", async () => {
    const samples = await scrapeWith(false);
    const devices = s.conductor.listAccelerators();
    for (const name of [
      'cyborg_accelerator_power_watts',
      'cyborg_accelerator_utilization_ratio',
      'cyborg_accelerator_memory_total_bytes',
      'cyborg_accelerator_consumers',
      'cyborg_accelerator_health',
      'cyborg_accelerator_maintenance',
    ]) {
      const series = select(samples, name);
      expect(series.map((x) => x.labels.accelerator).sort(), name).toEqual(devices.map((d) => d.id).sort());
    }
    const sum = (name: string) => select(samples, name).reduce((t, x) => t + x.value, 0);
    const own = devices.reduce((t, d) => t + (s.conductor.usage.latest(d.id)?.powerW ?? 0), 0);
    expect(sum('cyborg_accelerator_power_watts')).toBeCloseTo(own, 6);
    expect(sum('cyborg_accelerator_consumers')).toBe(4);
    const fpga = devices.find((d) => d.deviceType === 'FPGA' && d.host === 'compute-1')!;
    expect(select(samples, 'cyborg_accelerator_consumers', { accelerator: fpga.id })[0]!.value).toBe(3);
  });

  it('carries no instance or project label unless the operator enables them; then each allocation is its own series', async () => {
    const anonymous = await scrapeWith(false);
    expect(anonymous.filter((x) => 'instance' in x.labels || 'project' in x.labels)).toEqual([]);
    expect(select(anonymous, 'cyborg_accelerator_allocation')).toEqual([]);

    const labelled = await scrapeWith(true);
    const allocations = select(labelled, 'cyborg_accelerator_allocation');
    expect(allocations.map((x) => `${x.labels.instance}/${x.labels.project}`).sort()).toEqual(['vm-a/p-red', 'vm-b/p-red', 'vm-c/p-red', 'vm-d/p-blue']);
    expect(allocations.reduce((t, x) => t + x.value, 0)).toBe(select(labelled, 'cyborg_accelerator_consumers').reduce((t, x) => t + x.value, 0));
    // The device series stay one per device with the option on.
    expect(select(labelled, 'cyborg_accelerator_power_watts')).toHaveLength(s.conductor.listAccelerators().length);
  });
});
