import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, type NatsBus } from '../../bus/nats.js';
import { Subjects } from '../../bus/subjects.js';
import type { AcceleratorUsage, HostUsage } from '../../model/index.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { captureLogger } from '../support/log.js';
import { svc } from '../services.js';
import { Deployment } from './deployment.js';
import type { RoleProcess } from './helpers.js';

/** An operator of the cloud (noauth reads the roles from headers). */
const ADMIN = { 'x-roles': 'admin,member,reader', 'x-project-id': 'demo-project', 'x-user-id': 'admin-user' };
const HOST = 'node-u';

/**
 * Usage as an operator meets it in a distributed deployment: an agent sends its telemetry over
 * NATS, two conductors hear it and only the holder of the host's lease keeps it, the api role
 * fetches it from that conductor through the control protocol, and Prometheus scrapes the
 * conductor's /metrics. When the holder dies, the survivor takes the host and its window fills anew.
 */
describe.skipIf(!svc.nats || !svc.postgres)('usage telemetry across the distributed roles', { timeout: 300_000 }, () => {
  let dep: Deployment;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let api: string;
  let raw: NatsBus;
  const conductors = new Map<string, RoleProcess>();
  const env = { CYBORG_TELEMETRY_INTERVAL_MS: '200', CYBORG_USAGE_WINDOW: '20', CYBORG_METRICS_CONSUMER_LABELS: 'true' };

  const get = async (path: string): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${api}${path}`, { headers: ADMIN });
    return { status: res.status, body: await res.json().catch(() => undefined) };
  };
  const metricsPort = (p: RoleProcess): number => p.lines.find((l) => l.msg === 'conductor role up')!.metricsPort as number;
  const scrape = async (p: RoleProcess): Promise<string> => (await fetch(`http://127.0.0.1:${metricsPort(p)}/metrics`)).text();
  /** The conductor whose /metrics has series of the host: the lease holder. */
  const holder = async (): Promise<[string, RoleProcess]> => {
    for (const [name, p] of conductors) if (p.alive && (await scrape(p)).includes(`cyborg_accelerator_consumers{host="${HOST}"`)) return [name, p];
    throw new Error('no conductor exports the host');
  };

  beforeAll(async () => {
    db = await freshDatabase('nats_usage');
    dep = new Deployment(svc.nats!, db.url);
    conductors.set('conductor-u1', await dep.conductor('conductor-u1', env));
    conductors.set('conductor-u2', await dep.conductor('conductor-u2', env));
    await dep.agent(HOST, { ...env, CYBORG_FAKE_GPUS: '1', CYBORG_FAKE_NICS: '1', CYBORG_FAKE_VFS_PER_NIC: '1' });
    api = (await dep.apiRole('api-u')).url;
    raw = await connectBus({ url: svc.nats!, name: 'test-raw', log: captureLogger().log, prefix: dep.prefix });
  }, 240_000);
  afterAll(async () => {
    await raw?.close();
    await dep?.stop();
    await db?.drop();
  });

  it("the api serves a device's and a host's recent usage from the conductor holding the host", async () => {
    dep.logsOnFailure();
    const gpu = await eventually(
      async () => ((await get(`/cyborg/v1/accelerators?host=${HOST}&type=GPU`)).body?.accelerators ?? [])[0] as { id: string } | undefined,
      { what: 'the GPU in the api', timeoutMs: 60_000 },
    );
    const usage = await eventually(
      async () => {
        const r = await get(`/cyborg/v1/accelerators/${gpu.id}/usage`);
        return r.status === 200 && r.body.samples.length >= 5 ? (r.body as AcceleratorUsage) : undefined;
      },
      { what: 'five samples through the api', timeoutMs: 30_000 },
    );
    expect(usage).toMatchObject({ accelerator: gpu.id, host: HOST });
    expect(usage.samples[0]).toMatchObject({
      at: expect.any(String),
      utilization: expect.any(Number),
      memoryTotalMiB: 16_384,
      temperatureC: expect.any(Number),
      powerW: expect.any(Number),
    });

    const host = (await get(`/cyborg/v1/hosts/${HOST}/usage`)).body as HostUsage;
    expect(host.host).toBe(HOST);
    // The fake FPGA, the GPU and the NIC's one VF; the VF measures utilisation only.
    expect(host.devices).toHaveLength(3);
    const vf = host.devices.find((d) => d.samples.every((s) => s.memoryTotalMiB === undefined))!;
    expect(Object.keys(vf.samples[0]!).sort()).toEqual(['at', 'utilization']);

    // The window holds [conductor] usage_window samples, however long the agent goes on.
    await eventually(async () => (await get(`/cyborg/v1/accelerators/${gpu.id}/usage`)).body.samples.length === 20, {
      what: 'a full window',
      timeoutMs: 30_000,
    });
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await get(`/cyborg/v1/accelerators/${gpu.id}/usage`)).body.samples).toHaveLength(20);
    expect((await get('/cyborg/v1/hosts/nowhere/usage')).status).toBe(404);
  });

  it("Prometheus scrapes the holder's per-device series, with the consumer once one is attached", async () => {
    const client = await dep.api();
    const gpu = client.listAccelerators({ host: HOST, type: 'GPU' })[0]!;
    await client.act(gpu.id, { type: 'ENABLE' });
    await client.attach(gpu.id, { instanceUuid: 'vm-usage-1', projectId: 'p-usage' });
    const [holderName] = await holder();
    const other = [...conductors].find(([n]) => n !== holderName)![1];

    const text = await eventually(
      async () => {
        const t = await scrape(conductors.get(holderName)!);
        return t.includes(`instance="vm-usage-1"`) && new RegExp(`cyborg_accelerator_utilization_ratio\\{host="${HOST}",accelerator="${gpu.id}"`).test(t)
          ? t
          : undefined;
      },
      { what: "the consumer on the holder's series" },
    );
    expect(text).toContain(
      `cyborg_accelerator_allocation{host="${HOST}",accelerator="${gpu.id}",name="${gpu.name}",instance="vm-usage-1",project="p-usage",role="conductor"} 1`,
    );
    expect(text).toMatch(
      new RegExp(`cyborg_accelerator_power_watts\\{host="${HOST}",accelerator="${gpu.id}",name="${gpu.name}",state="attached",role="conductor"\\} [0-9.]+`),
    );
    // The other conductor hears the same telemetry but keeps none of it: no series, no window.
    const elsewhere = await scrape(other);
    expect(elsewhere).not.toContain(`host="${HOST}"`);
    expect(elsewhere).toMatch(/cyborg_usage_window_bytes\{role="conductor"\} 0\n/);

    const { body } = await get('/cyborg/v1/projects');
    expect(body.projects).toContainEqual({
      projectId: 'p-usage',
      accelerators: 1,
      allocations: 1,
      instances: ['vm-usage-1'],
      byDeviceType: { GPU: 1 },
      byResourceClass: { PGPU: 1 },
    });
  });

  it('garbage on the telemetry subject costs nothing but a count', async () => {
    const [, p] = await holder();
    const subject = `${dep.prefix}.${Subjects.telemetry(HOST)}`;
    for (let i = 0; i < 50; i++) {
      raw.nc.publish(subject, 'not json at all');
      raw.nc.publish(subject, JSON.stringify({ host: HOST, at: 'yesterday', usage: 'lots' }));
      raw.nc.publish(subject, JSON.stringify({ host: HOST, at: Date.now(), usage: [{ deployableUuid: 'ghost', utilization: 0.5 }] }));
    }
    await eventually(async () => /cyborg_usage_samples_total\{outcome="unknown_device",role="conductor"\} ([5-9]\d|\d{3,})/.test(await scrape(p)), {
      what: 'the ghost samples counted',
    });
    expect(p.alive).toBe(true);
    const gpu = (await dep.api()).listAccelerators({ host: HOST, type: 'GPU' })[0]!;
    expect((await get(`/cyborg/v1/accelerators/${gpu.id}/usage`)).body.samples.length).toBeGreaterThan(0);
  });

  it('when the holder dies, the survivor takes the host and its window fills anew', async () => {
    const [name, dying] = await holder();
    await dying.kill('SIGKILL');
    const survivor = [...conductors].find(([n]) => n !== name)![1];
    const gpu = (await dep.api()).listAccelerators({ host: HOST, type: 'GPU' })[0]!;
    await eventually(async () => (await scrape(survivor)).includes(`accelerator="${gpu.id}"`), { what: 'the survivor to hold the host', timeoutMs: 60_000 });
    const usage = await eventually(
      async () => {
        const r = await get(`/cyborg/v1/accelerators/${gpu.id}/usage`);
        return r.status === 200 && r.body.samples.length >= 3 ? (r.body as AcceleratorUsage) : undefined;
      },
      { what: 'samples from the survivor', timeoutMs: 60_000 },
    );
    // The window lives in memory: the survivor's starts from its own first sample, after the death.
    expect(usage.samples.length).toBeLessThanOrEqual(20);
  });
});
