/**
 * Regression (issue 39, "A 404 for a device that exists"): for about a second during a conductor
 * restart or a lease takeover the api held a view without the host's accelerators — rebuilt from
 * a snapshot taken before the conductor had taken the host over — and answered 404 for them: 30
 * of Nova's binds in one of six runs ("Deployable not found with resource provider"), operator
 * reads and toggles in four. Nova treats a 404 on a bind as a failed boot.
 *
 * Now, until every conductor says it is taking no host over, a miss in a freshly loaded view is
 * "not yet": 503 + Retry-After (control/view-complete.ts), whichever route looked it up. Here a
 * host's lease holder is killed with a second conductor beside it (the takeover), then that one
 * is killed and a new one started (a restart), while Nova and an operator ask the api role about
 * the host's devices by id; not one answer is a 404.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { svc } from '../services.js';
import { Deployment } from '../nats/deployment.js';

const NOVA = { 'x-auth-token': 'admin', 'content-type': 'application/json' };

describe.skipIf(!svc.nats || !svc.postgres)('a 404 for a device that exists', { timeout: 240_000 }, () => {
  let dep: Deployment | undefined;
  let db: Awaited<ReturnType<typeof freshDatabase>> | undefined;
  afterEach(async () => {
    await dep?.stop();
    await db?.drop();
  });

  it('is never answered while the host is taken over by the other conductor, nor when the only conductor restarts', async () => {
    db = await freshDatabase('regress_404_exists');
    dep = new Deployment(svc.nats!, db.url);
    dep.logsOnFailure();
    await dep.conductor('holder');
    await dep.agent('node-x');
    await dep.conductor('survivor');
    const { url } = await dep.apiRole('api-x');
    const view = await dep.api();
    await eventually(() => view.listAccelerators({ host: 'node-x' }).length === 2, { what: "node-x's accelerators in the view" });
    const accs = view.listAccelerators({ host: 'node-x' });
    const fpga = accs.find((a) => a.deviceType === 'FPGA')!;
    const dp = await fetch(`${url}/v2/device_profiles`, {
      method: 'POST',
      headers: NOVA,
      body: JSON.stringify([{ name: 'exists-fpga', groups: [{ 'resources:FPGA': '1' }] }]),
    });
    expect(dp.status).toBe(201);

    // What Nova and an operator ask about the host's devices, by id, as fast as answers come.
    const statuses = new Map<number, number>();
    const notFound: string[] = [];
    let stopped = false;
    const ask = async (path: string, method = 'GET', body?: unknown): Promise<Record<string, unknown> | undefined> => {
      const res = await fetch(`${url}${path}`, { method, headers: NOVA, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }).catch(() => undefined);
      if (!res) return undefined;
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const text = await res.text();
      if (res.status === 404) notFound.push(`${method} ${path}: ${text}`);
      return res.status === 201 ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    };
    const asking = (async () => {
      while (!stopped) {
        for (const a of accs) await ask(`/cyborg/v1/accelerators/${a.id}`);
        await ask(`/v2/deployables/${fpga.id}`);
        // Nova's first step names the device profile: a view without its documents said 404 to it.
        const created = await ask('/v2/accelerator_requests', 'POST', { device_profile_name: 'exists-fpga' });
        const uuid = (created?.arqs as { uuid: string }[] | undefined)?.[0]?.uuid;
        if (uuid) await fetch(`${url}/v2/accelerator_requests?arqs=${uuid}`, { method: 'DELETE', headers: NOVA }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    await dep.procs.find((p) => p.name === 'holder')!.kill('SIGKILL');
    // The survivor takes the host over once the holder's lease has expired, and the api's view follows.
    await eventually(
      async () => (await fetch(`${url}/readyz`)).status === 200 && (await fetch(`${url}/cyborg/v1/accelerators/${fpga.id}`, { headers: NOVA })).status === 200,
      {
        what: 'the api role ready, the host taken over',
        timeoutMs: 60_000,
      },
    );
    await new Promise((r) => setTimeout(r, 1_000));
    // Then the only conductor left restarts under a new id: its first snapshot holds no host yet.
    await dep.procs.find((p) => p.name === 'survivor')!.kill('SIGKILL');
    await dep.conductor('reborn');
    await eventually(
      async () => (await fetch(`${url}/readyz`)).status === 200 && (await fetch(`${url}/cyborg/v1/accelerators/${fpga.id}`, { headers: NOVA })).status === 200,
      {
        what: 'the api role ready, the host taken back',
        timeoutMs: 60_000,
      },
    );
    await new Promise((r) => setTimeout(r, 1_000));
    stopped = true;
    await asking;
    process.stdout.write(`answers during the takeover: ${JSON.stringify(Object.fromEntries(statuses))}\n`);
    expect(notFound).toEqual([]);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0);
  });
});
