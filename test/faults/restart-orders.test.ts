import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RemoteControlPlane } from '../../control/client.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { svc } from '../services.js';
import { Deployment } from '../nats/deployment.js';
import type { RoleProcess } from '../nats/helpers.js';

/**
 * Rounds of kills and restarts. Issue 39 asks for 20 in a row (`CYBORG_TEST_RESTART_ROUNDS=20`:
 * 4 minutes on the 2-core VM, 3,231 calls on known ids, 0 answered 404); the default keeps the file
 * under 3 minutes in CI.
 */
const ROUNDS = Number(process.env.CYBORG_TEST_RESTART_ROUNDS ?? 8);
type Role = 'conductor' | 'agent' | 'api';
/** Which roles die together (SIGKILL) and the order they come back in: every role, every start order. */
const ORDERS: Role[][] = [
  ['conductor'],
  ['api'],
  ['agent'],
  ['conductor', 'api'],
  ['api', 'conductor'],
  ['agent', 'conductor'],
  ['conductor', 'agent'],
  ['conductor', 'agent', 'api'],
  ['api', 'agent', 'conductor'],
  ['agent', 'api', 'conductor'],
];
const NOVA = { 'x-auth-token': 'admin', 'content-type': 'application/json' };

/**
 * Every role killed and restarted, in every start order, round after round on real NATS and
 * PostgreSQL: after each round the api role says ready only once its view is complete, the view
 * equals the database (digests compared, model/digest.ts), and a Nova boot's bind through the api
 * role finds its deployable (never 404) — with no restart of anything else to make it so.
 */
describe.skipIf(!svc.nats || !svc.postgres)(`${ROUNDS} rounds of roles killed and restarted in every order`, { timeout: 30_000 + ROUNDS * 60_000 }, () => {
  let dep: Deployment;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const live = new Map<Role, RoleProcess>();
  let apiUrl = '';
  let view: RemoteControlPlane;

  const start = async (role: Role, conductorUp = true): Promise<void> => {
    if (role === 'conductor') live.set(role, await dep.conductor('restart-c'));
    // Before any conductor is back it cannot register yet; it keeps trying (the readiness below waits).
    else if (role === 'agent') live.set(role, await dep.agent('node-r', {}, { registered: conductorUp }));
    else {
      const api = await dep.apiRole('restart-api');
      live.set(role, api.proc);
      apiUrl = api.url;
    }
  };
  const readyz = async (): Promise<number> => (await fetch(`${apiUrl}/readyz`).catch(() => null))?.status ?? 0;
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await fetch(`${apiUrl}${path}`, { method, headers: NOVA, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };

  beforeAll(async () => {
    db = await freshDatabase('fault_restart_orders');
    dep = new Deployment(svc.nats!, db.url);
    for (const role of ['conductor', 'agent', 'api'] as const) await start(role);
    view = await dep.api();
    await eventually(async () => (await readyz()) === 200 && view.listAccelerators({ host: 'node-r' }).length === 2, {
      what: 'the deployment up',
      timeoutMs: 60_000,
    });
    for (const a of view.listAccelerators({ host: 'node-r' })) expect((await view.act(a.id, { type: 'ENABLE' })).state).toBe('ready');
    expect((await call('POST', '/v2/device_profiles', [{ name: 'restart-dp', groups: [{ 'resources:PGPU': '1' }] }])).status).toBe(201);
    expect((await call('POST', '/v2/device_profiles', [{ name: 'restart-fpga', groups: [{ 'resources:FPGA': '1' }] }])).status).toBe(201);
  }, 240_000);
  afterAll(async () => {
    await dep?.stop();
    await db?.drop();
  });

  /**
   * Nova and an operator at work through every restart (issue 39, "a 404 for a device that
   * exists"): boots on the FPGA (create, bind, read back, delete) and reads of both accelerators
   * by id, through whichever api role is up. Every 404 on an id that exists is kept: there must be
   * none — a view still loading answers 503 + Retry-After instead.
   */
  const novaAtWork = (fpga: { id: string; rpUuid: string }, gpuId: string): { notFound: string[]; asked: () => number; stop: () => Promise<void> } => {
    const notFound: string[] = [];
    let stopped = false;
    let asked = 0;
    const ask = async (
      what: string,
      method: string,
      path: string,
      body?: unknown,
      mayBeGone = false,
    ): Promise<{ status: number; json: Record<string, unknown> } | undefined> => {
      const r = await call(method, path, body).catch(() => undefined); // the api role itself may be down
      asked++;
      if (r?.status === 404 && !mayBeGone) notFound.push(`${what}: ${JSON.stringify(r.json)}`);
      return r;
    };
    const loop = async (): Promise<void> => {
      for (let i = 0; !stopped; i++) {
        for (const id of [fpga.id, gpuId]) await ask(`GET accelerator ${id}`, 'GET', `/cyborg/v1/accelerators/${id}`);
        const created = await ask('create', 'POST', '/v2/accelerator_requests', { device_profile_name: 'restart-fpga' });
        const uuid = created?.status === 201 ? (created.json.arqs as { uuid: string }[])[0]!.uuid : undefined;
        if (uuid) {
          await ask(`bind ${uuid}`, 'PATCH', '/v2/accelerator_requests', {
            [uuid]: [
              { path: '/hostname', op: 'add', value: 'node-r' },
              { path: '/device_rp_uuid', op: 'add', value: fpga.rpUuid },
              { path: '/instance_uuid', op: 'add', value: randomUUID() },
            ],
          });
          await ask(`GET arq ${uuid}`, 'GET', `/v2/accelerator_requests/${uuid}`);
          // Nova deletes until it is told done (its clean-up after a failed boot does the same).
          // A 404 once an answer left the outcome open (504, or the api role gone mid-call) is the
          // delete having been done — the 503s a view still loading gives meanwhile say "not yet",
          // not "not done". A 404 after nothing but 503s would be a 503 that was done.
          const answers: number[] = [];
          for (let k = 0; k < 50 && !stopped; k++) {
            const open = answers.some((a) => a === 504 || a === 0);
            const r = await ask(`delete ${uuid} (after ${answers.join(',') || 'none'})`, 'DELETE', `/v2/accelerator_requests?arqs=${uuid}`, undefined, open);
            answers.push(r?.status ?? 0);
            if (r?.status === 204 || (r?.status === 404 && open)) break;
            await new Promise((res) => setTimeout(res, 200));
          }
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const running = loop();
    return {
      notFound,
      asked: () => asked,
      stop: async () => {
        stopped = true;
        await running;
      },
    };
  };

  it("each round ends with the view complete and equal to the database, and Nova's bind finds its deployable", async () => {
    dep.logsOnFailure();
    const accs = view.listAccelerators({ host: 'node-r' });
    const fpga = accs.find((a) => a.deviceType === 'FPGA')!;
    const nova = novaAtWork(fpga, accs.find((a) => a.deviceType === 'GPU')!.id);
    for (let round = 0; round < ROUNDS; round++) {
      const order = ORDERS[round % ORDERS.length]!;
      for (const role of order) await live.get(role)!.kill('SIGKILL');
      if (order.includes('conductor') && !order.includes('api')) {
        // The api role that stays up says at once that it cannot take writes.
        await eventually(async () => (await readyz()) === 503, { what: `round ${round}: /readyz 503 with the conductor gone`, timeoutMs: 20_000 });
      }
      for (const [i, role] of order.entries()) await start(role, !order.includes('conductor') || order.indexOf('conductor') < i);
      await eventually(async () => (await readyz()) === 200, { what: `round ${round} (${order.join(', ')}): the api role ready again`, timeoutMs: 90_000 });
      // The api role's view: complete (its /readyz) and holding what the database holds.
      const listed = await call('GET', '/cyborg/v1/accelerators?host=node-r');
      expect(listed.status, `round ${round}`).toBe(200);
      // This test's own api view, through the same restarts: equal to the database by digest.
      await eventually(async () => (await view.viewCheck.check()) === 'equal', { what: `round ${round}: the view equal to the database`, timeoutMs: 60_000 });
      // A Nova boot through the api role: create, bind (never 404 for an existing deployable), delete.
      const gpu = view.listAccelerators({ host: 'node-r' }).find((a) => a.deviceType === 'GPU')!;
      const created = await call('POST', '/v2/accelerator_requests', { device_profile_name: 'restart-dp' });
      expect(created.status, `round ${round}: create ${JSON.stringify(created.json)}`).toBe(201);
      const uuid = (created.json.arqs as { uuid: string }[])[0]!.uuid;
      const bound = await call('PATCH', '/v2/accelerator_requests', {
        [uuid]: [
          { path: '/hostname', op: 'add', value: 'node-r' },
          { path: '/device_rp_uuid', op: 'add', value: gpu.rpUuid },
          { path: '/instance_uuid', op: 'add', value: randomUUID() },
        ],
      });
      expect(bound.status, `round ${round}: bind ${JSON.stringify(bound.json)}`).toBe(202);
      await eventually(async () => (await call('GET', `/v2/accelerator_requests/${uuid}`)).json.state === 'Bound', { what: `round ${round}: the ARQ bound` });
      expect((await call('DELETE', `/v2/accelerator_requests?arqs=${uuid}`)).status, `round ${round}: delete`).toBe(204);
    }
    await nova.stop();
    process.stdout.write(`restart story, ${ROUNDS} rounds: ${nova.asked()} calls on known ids, ${nova.notFound.length} answered 404\n`);
    expect(nova.notFound).toEqual([]);
  });
});
