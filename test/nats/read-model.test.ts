import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RemoteControlPlane } from '../../control/client.js';
import type { ViewsBatchMsg } from '../../control/messages.js';
import { Subjects } from '../../bus/subjects.js';
import type { AcceleratorView } from '../../model/index.js';
import { eventually } from '../support/eventually.js';
import { Deployment } from './deployment.js';
import { natsServerInstalled, PrivateNats, type RoleProcess } from './helpers.js';

/** An operator of the cloud (noauth reads the roles from headers). */
const ADMIN = { 'x-roles': 'admin,member,reader', 'x-project-id': 'demo-project', 'x-user-id': 'admin-user' };

const get = async (url: string): Promise<{ status: number; body: any }> => {
  const res = await fetch(url, { headers: ADMIN });
  return { status: res.status, body: await res.json().catch(() => undefined) };
};

/**
 * The api's copy of the state, as an operator meets it: an api started before any conductor says
 * it is not ready and then converges; a NATS restart loses no change; a snapshot far larger than
 * one NATS message loads in pages; a forged views message changes nothing.
 */
describe.skipIf(!natsServerInstalled)("the api's read model converges", { timeout: 600_000 }, () => {
  let nats: PrivateNats;
  let dep: Deployment;
  let api: { proc: RoleProcess; url: string };
  let client: RemoteControlPlane;
  const fpga = (): AcceleratorView => client.listAccelerators({ host: 'node-r', type: 'FPGA' })[0]!;
  const newArq = () => client.createArq({ deviceProfileName: 'fpga-profile', deviceProfileGroupId: 0, projectId: null });

  beforeAll(async () => {
    nats = await PrivateNats.start();
    dep = new Deployment(nats.url);
  }, 60_000);
  afterAll(async () => {
    await dep?.stop();
    await nats?.stop();
  });

  it('an api started before the conductor is not ready, then converges and serves binds', async () => {
    dep.logsOnFailure();
    api = await dep.apiRole('api-early');
    const early = await get(`${api.url}/readyz`);
    expect(early.status).toBe(503);
    expect(early.body.checks.view).toMatch(/loading/);

    await dep.conductor('conductor-r');
    await dep.agent('node-r', { CYBORG_ENABLED_DRIVERS: 'fake_driver' });
    await eventually(async () => (await get(`${api.url}/readyz`)).status === 200, { what: 'the early api to be ready', timeoutMs: 60_000 });

    client = await dep.api();
    await eventually(() => fpga(), { what: "node-r's FPGA" });
    await client.act(fpga().id, { type: 'ENABLE' });
    await client.documents.createProfile({
      uuid: '00000000-0000-4000-8000-0000000000f1',
      name: 'fpga-profile',
      description: null,
      groups: [{ 'resources:FPGA': '1' }],
      createdAt: new Date().toISOString(),
      updatedAt: null,
    });
    const arq = await newArq();
    const bound = await client.bindArq(arq.uuid, { hostname: 'node-r', deviceRpUuid: fpga().rpUuid, instanceUuid: 'vm-r1', projectId: null });
    expect(bound.state).toBe('Bound');
    // Nova reads the bind from the api that started first: it sees what the conductor committed.
    const seen = await eventually(
      async () => {
        const r = await get(`${api.url}/v2/accelerator_requests/${arq.uuid}`);
        return r.status === 200 && r.body.state === 'Bound' ? r.body : undefined;
      },
      { what: 'the bound ARQ through the early api' },
    );
    expect(seen.hostname).toBe('node-r');
  });

  it('a change made while NATS restarts is visible after it, without restarting the api', async () => {
    dep.logsOnFailure();
    const arq = await newArq();
    await eventually(async () => (await get(`${api.url}/v2/accelerator_requests/${arq.uuid}`)).status === 200, { what: 'the new ARQ through the api' });

    await nats.down();
    await eventually(() => dep.clientLog.lines.some((l) => l.msg === 'disconnected from NATS; reconnecting'), { what: 'the outage noticed' });
    // Sent during the outage (the client holds it until it reconnects; an operator retries if its
    // reply is lost); the views it commits may be lost on the way to the api.
    const deleting = client.deleteArq(arq.uuid);
    await nats.up();
    await deleting.catch(() =>
      eventually(
        () =>
          client.deleteArq(arq.uuid).then(
            () => true,
            (e: { code?: string }) => e.code === 'arq.not_found',
          ),
        { what: 'the delete retried' },
      ),
    );

    await eventually(async () => (await get(`${api.url}/v2/accelerator_requests/${arq.uuid}`)).status === 404, {
      what: 'the delete through the api',
      timeoutMs: 60_000,
    });
    await eventually(async () => (await get(`${api.url}/readyz`)).status === 200, { what: 'the api ready again', timeoutMs: 60_000 });
    expect(api.proc.alive).toBe(true);
  });

  it('a new api loads a snapshot far over one NATS message, page by page', async () => {
    dep.logsOnFailure();
    const target = 5_000;
    while (client.listArqs().length < target) {
      const missing = Math.min(250, target - client.listArqs().length);
      await Promise.all(Array.from({ length: missing }, () => newArq()));
    }
    // Well over the server's max_payload of 1 MiB all together.
    expect(JSON.stringify(client.listArqs()).length).toBeGreaterThan(1024 * 1024);

    const late = await dep.apiRole('api-late');
    await eventually(async () => (await get(`${late.url}/readyz`)).status === 200, { what: 'the late api to be ready', timeoutMs: 120_000 });
    const listed = await get(`${late.url}/v2/accelerator_requests`);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.arqs.length).toBe(client.listArqs().length);
  });

  it('refuses a forged views message and keeps the view right', async () => {
    dep.logsOnFailure();
    const nc = dep.bus!.nc;
    const wire = `${dep.prefix}.${Subjects.views}`;
    // A forger that listens first, and so knows the conductor's name, incarnation and numbers.
    const heard = await new Promise<ViewsBatchMsg>((resolve) => {
      const sub = nc.subscribe(wire, {
        callback: (_e, m) => {
          sub.unsubscribe();
          resolve(m.json<ViewsBatchMsg>());
        },
      });
    });
    const victim = client.listArqs()[0]!;
    const forged: ViewsBatchMsg = {
      conductorId: heard.conductorId,
      epoch: heard.epoch,
      seq: heard.seq + 1_000,
      hosts: [],
      accelerators: [],
      arqs: [],
      documents: [],
      transitions: [],
      deleted: { arqs: [victim.uuid] },
    };
    const before = dep.clientLog.lines.filter((l) => l.msg === 'refused a views message').length;
    nc.publish(wire, JSON.stringify(forged));
    nc.publish(wire, JSON.stringify({ ...forged, epoch: 'not-an-incarnation', seq: 1 }));
    await nc.flush();

    await eventually(() => dep.clientLog.lines.filter((l) => l.msg === 'refused a views message').length >= before + 2, { what: 'both forgeries refused' });
    await eventually(() => client.notReady() === undefined, { what: 'the view current again', timeoutMs: 60_000 });
    expect(client.getArq(victim.uuid).uuid).toBe(victim.uuid);
    expect((await get(`${api.url}/v2/accelerator_requests/${victim.uuid}`)).status).toBe(200);
    // And the view still follows the conductor.
    expect((await client.deleteArq(victim.uuid)).state).toBe('Deleted');
    await eventually(async () => (await get(`${api.url}/v2/accelerator_requests/${victim.uuid}`)).status === 404, { what: 'a real delete through the api' });
  });
});
