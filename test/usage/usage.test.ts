import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../../metrics/index.js';
import { startHealthServer, type HealthServer } from '../../metrics/http.js';
import { Subjects } from '../../bus/subjects.js';
import { TelemetryMessage } from '../../bus/schemas.js';
import { ringBytes } from '../../actors/services/index.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';
import { FakeDriver } from '../../drivers/fake/index.js';
import type { Driver, Usage } from '../../drivers/driver.js';

const ADMIN = { 'x-auth-token': 'notused' };

/**
 * An operator looks at what the fleet is doing: each device's recent utilisation, memory,
 * temperature and power (the agents' telemetry, kept in a bounded window on the conductor, never
 * in the database), what each project holds, and Prometheus series labelled with the consumer,
 * scraped over HTTP as Prometheus does.
 */
describe('usage telemetry and consumers', () => {
  let rt: Stack;
  let metrics: Metrics;
  let scrape: HealthServer;

  beforeAll(async () => {
    rt = await startStack({ hosts: ['compute-u'], fake: { gpus: 3 }, api: true, agent: { telemetryIntervalMs: 50 } });
    metrics = new Metrics('conductor');
    // This operator's /metrics is behind its own auth: consumers are labelled ([conductor] metrics_consumer_labels).
    metrics.watchConductor(rt.conductor, { consumerLabels: true });
    scrape = (await startHealthServer({ address: '127.0.0.1', port: 0, metrics, healthy: () => ({ ok: true }), log: rt.log }))!;
  });
  afterAll(async () => {
    await scrape?.close();
    await rt?.stop();
  });

  const get = async (url: string): Promise<{ status: number; body: any }> => {
    const res = await rt.app.inject({ method: 'GET', url, headers: ADMIN });
    return { status: res.statusCode, body: res.json() };
  };
  const prometheus = async (): Promise<string> => (await fetch(`http://127.0.0.1:${scrape.port}/metrics`)).text();
  const gpus = () => rt.conductor.listAccelerators({ type: 'GPU' });

  it("shows a device's recent samples, oldest first, and a host's devices", async () => {
    const gpu = gpus()[0]!;
    await eventually(async () => (await get(`/cyborg/v1/accelerators/${gpu.id}/usage`)).body.samples?.length >= 3, { what: 'three samples' });
    const { body } = await get(`/cyborg/v1/accelerators/${gpu.id}/usage`);
    expect(body).toMatchObject({ accelerator: gpu.id, host: 'compute-u' });
    const s = body.samples[0];
    expect(s.utilization).toBeGreaterThanOrEqual(0);
    expect(s.utilization).toBeLessThanOrEqual(100);
    expect(s).toMatchObject({ memoryTotalMiB: 16_384, temperatureC: expect.any(Number), powerW: expect.any(Number) });
    const times = body.samples.map((x: { at: string }) => Date.parse(x.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);

    const host = await get('/cyborg/v1/hosts/compute-u/usage');
    expect(host.body.host).toBe('compute-u');
    expect(host.body.devices.map((d: { accelerator: string }) => d.accelerator)).toContain(gpu.id);
    expect(host.body.devices.find((d: { accelerator: string }) => d.accelerator === gpu.id).samples[0]).toMatchObject({
      at: expect.any(String),
      memoryTotalMiB: 16_384,
    });
  });

  it('answers a bad question with a clear 4xx', async () => {
    expect((await get('/cyborg/v1/hosts/nowhere/usage')).status).toBe(404);
    expect((await get('/cyborg/v1/accelerators/00000000-0000-0000-0000-000000000000/usage')).status).toBe(404);
    expect((await get('/cyborg/v1/accelerators/not-a-uuid/usage')).status).toBe(400);
    expect((await get(`/cyborg/v1/hosts/${'h'.repeat(5_000)}/usage`)).status).toBe(400);
  });

  it('keeps a bounded window whatever the rate, and drops samples of devices it does not hold', async () => {
    const gpu = gpus()[0]!;
    const { stats } = rt.conductor.usage;
    const unknown = stats.unknownDevice;
    const bytes = rt.conductor.usage.bytes;
    // A flood on the host's subject: 500 samples, one for a device nobody has.
    for (let i = 0; i < 500; i++) {
      rt.bus.publish(Subjects.telemetry('compute-u'), TelemetryMessage, {
        host: 'compute-u',
        at: Date.now(),
        usage: [
          { deployableUuid: gpu.id, utilization: 1 },
          { deployableUuid: 'ghost-device', utilization: 0.5 },
        ],
      });
    }
    await eventually(() => stats.unknownDevice >= unknown + 500, { what: 'the ghost samples dropped' });
    expect(rt.conductor.usage.samples(gpu.id).length).toBe(60);
    // The flood cost no memory: the windows are as large as before, a fixed size per device held.
    expect(rt.conductor.usage.bytes).toBe(bytes);
    expect(bytes).toBe(rt.conductor.usage.devices * ringBytes(60));
    expect((await get('/cyborg/v1/accelerators/ghost-device/usage')).status).toBe(400);
    // Another host's subject may not speak for compute-u.
    const misaddressed = rt.conductor.reportStats.misaddressedReports;
    rt.bus.publish(Subjects.telemetry('other-host'), TelemetryMessage, {
      host: 'compute-u',
      at: Date.now(),
      usage: [{ deployableUuid: gpu.id, utilization: 0.123 }],
    });
    await eventually(() => rt.conductor.reportStats.misaddressedReports > misaddressed, { what: 'the misaddressed telemetry counted' });
    expect(rt.conductor.usage.samples(gpu.id).map((s) => s.utilization)).not.toContain(12.3);
  });

  it("clamps a wrong value without losing the host's other samples", async () => {
    const [a, b] = gpus();
    const clamped = rt.conductor.usage.stats.clamped;
    const at = Date.now() + 1;
    // A driver that reports percent instead of a fraction and a sensor gone mad, beside a sane sample.
    rt.bus.publish(Subjects.telemetry('compute-u'), TelemetryMessage, {
      host: 'compute-u',
      at,
      usage: [
        { deployableUuid: a!.id, utilization: 87, temperatureC: 9_999, memoryUsedBytes: 64 * 1024 ** 3, memoryTotalBytes: 16 * 1024 ** 3 },
        { deployableUuid: b!.id, utilization: 0.42, powerW: 180 },
      ],
    });
    // Looked for in the window, not as the latest: the agent's own samples (every 50 ms) follow it.
    const kept = (id: string, sample: object): boolean => rt.conductor.usage.samples(id).some((s) => isDeepStrictEqual(s, sample));
    const iso = new Date(at).toISOString();
    await eventually(() => kept(b!.id, { at: iso, utilization: 42, powerW: 180 }), { what: 'the sane sample kept' });
    expect(kept(a!.id, { at: iso, utilization: 100, temperatureC: 150, memoryUsedMiB: 16_384, memoryTotalMiB: 16_384 }), 'the wrong values clamped').toBe(true);
    expect(rt.conductor.usage.stats.clamped).toBe(clamped + 1);
    expect(await prometheus()).toMatch(/cyborg_usage_samples_total\{outcome="clamped",role="conductor"\} [1-9]/);
  });

  it('sums what each project holds, and labels the Prometheus series with the consumer', async () => {
    const [a, b] = gpus();
    for (const x of [a!, b!]) await rt.conductor.act(x.id, { type: 'ENABLE' });
    await rt.conductor.attach(a!.id, { instanceUuid: 'vm-1', projectId: 'p-blue' });
    await rt.conductor.attach(b!.id, { instanceUuid: 'vm-2', projectId: 'p-blue' });

    const { body } = await get('/cyborg/v1/projects');
    expect(body.projects).toEqual([
      {
        projectId: 'p-blue',
        accelerators: 2,
        allocations: 2,
        instances: ['vm-1', 'vm-2'],
        byDeviceType: { GPU: 2 },
        byResourceClass: { [a!.resourceClass ?? 'none']: 2 },
      },
    ]);

    const text = await prometheus();
    expect(text).toContain(
      `cyborg_accelerator_allocation{host="compute-u",accelerator="${a!.id}",name="${a!.name}",instance="vm-1",project="p-blue",role="conductor"} 1`,
    );
    expect(text).toMatch(
      new RegExp(
        `cyborg_accelerator_utilization_ratio\\{host="compute-u",accelerator="${b!.id}",name="${b!.name}",state="attached",role="conductor"\\} [0-9.]+`,
      ),
    );
    expect(text).toMatch(new RegExp(`cyborg_accelerator_memory_total_bytes\\{host="compute-u",accelerator="${a!.id}",[^}]*\\} ${16 * 1024 ** 3}`));
    expect(text).toMatch(/cyborg_accelerator_temperature_celsius\{/);
    expect(text).toMatch(/cyborg_accelerator_power_watts\{/);
    // A free device has its series too, with no consumer.
    const free = gpus()[2]!;
    expect(text).toContain(`cyborg_accelerator_consumers{host="compute-u",accelerator="${free.id}",name="${free.name}",state="inactive",role="conductor"} 0`);
    expect(text).not.toMatch(new RegExp(`cyborg_accelerator_allocation\\{[^}]*accelerator="${free.id}"`));
    expect(text).toMatch(/cyborg_usage_window_bytes\{role="conductor"\} [1-9]/);
  });

  it('forgets a device pulled from the host: its window, its series, and its samples from then on', async () => {
    const gone = gpus()[2]!;
    expect(await prometheus()).toContain(`accelerator="${gone.id}"`);
    rt.fakes[0]!.unplug(gone.deviceUuid);
    await rt.agents[0]!.discoverAndReport();
    expect(rt.conductor.getAccelerator(gone.id).state).toBe('removed');
    expect(rt.conductor.usage.samples(gone.id)).toEqual([]);
    expect((await get(`/cyborg/v1/accelerators/${gone.id}/usage`)).body.samples).toEqual([]);
    expect((await get('/cyborg/v1/hosts/compute-u/usage')).body.devices.map((d: { accelerator: string }) => d.accelerator)).not.toContain(gone.id);
    expect(await prometheus()).not.toContain(`accelerator="${gone.id}"`);
    // Should an agent still speak of it, the sample is counted and dropped.
    const unknown = rt.conductor.usage.stats.unknownDevice;
    rt.bus.publish(Subjects.telemetry('compute-u'), TelemetryMessage, {
      host: 'compute-u',
      at: Date.now(),
      usage: [{ deployableUuid: gone.id, utilization: 0.5 }],
    });
    await eventually(() => rt.conductor.usage.stats.unknownDevice > unknown, { what: "the removed device's sample dropped" });
    expect(rt.conductor.usage.samples(gone.id)).toEqual([]);
  });
});

/** A driver whose usage query fails every time (a vendor tool gone), beside a working one. */
class NoUsageDriver implements Driver {
  readonly name = 'broken';
  readonly version = '1.0.0';
  calls = 0;
  async discover() {
    return [];
  }
  async usage(): Promise<Usage[]> {
    this.calls++;
    throw new Error('nvidia-smi: command not found');
  }
}

describe('a driver that cannot report usage', () => {
  let rt: Stack;
  const broken = new NoUsageDriver();

  beforeAll(async () => {
    rt = await startStack({ hosts: ['compute-b'], drivers: (host) => [broken, new FakeDriver({ host, gpus: 1 })], agent: { telemetryIntervalMs: 30 } });
  });
  afterAll(async () => {
    await rt?.stop();
  });

  it('costs only its own samples, and is said once in the log', async () => {
    const gpu = rt.conductor.listAccelerators({ type: 'GPU' })[0]!;
    await eventually(() => rt.conductor.usage.samples(gpu.id).length >= 5 && broken.calls >= 5, { what: "the fake driver's samples despite the broken one" });
    expect(rt.lines.filter((l) => l.msg.startsWith('a driver could not report usage'))).toHaveLength(1);
  });
});

describe('a host with thousands of VFs', () => {
  let rt: Stack;

  beforeAll(async () => {
    rt = await startStack({ hosts: ['compute-vf'], fake: { nics: 1, vfsPerNic: 2_500 }, agent: { telemetryIntervalMs: 200 } });
  });
  afterAll(async () => {
    await rt?.stop();
  });

  it('sends its usage in messages NATS carries, and every VF gets its samples', async () => {
    const sizes: number[] = [];
    const unsubscribe = rt.bus.subscribe(Subjects.telemetry('compute-vf'), TelemetryMessage, (msg) => {
      sizes.push(msg.usage.length);
    });
    await eventually(() => sizes.length >= 2, { what: 'a round of telemetry' });
    unsubscribe();
    expect(Math.max(...sizes)).toBeLessThanOrEqual(2_000);
    const vfs = rt.conductor.listAccelerators({ type: 'NIC' });
    expect(vfs).toHaveLength(2_500);
    await eventually(() => vfs.every((v) => rt.conductor.usage.samples(v.id).length > 0), { what: 'a sample for every VF' });
  });
});
