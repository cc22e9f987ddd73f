import { afterEach, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../support/stack.js';
import { eventually } from '../support/eventually.js';

let rt: Stack | undefined;
afterEach(async () => {
  await rt?.stop();
  rt = undefined;
});

describe('hosts: liveness and inventory', () => {
  it('a silent host goes stale then lost; its accelerators go offline keeping their allocations, and come back', async () => {
    rt = await startStack({ timing: { staleAfterMs: 100, lostAfterMs: 250 } });
    const c = rt.conductor;
    const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
    await c.act(fpga.id, { type: 'ENABLE' });
    await c.attach(fpga.id, { instanceUuid: 'vm-1' });
    await eventually(() => c.getHost('compute-1').state === 'lost', { what: 'host lost', timeoutMs: 5000 });
    const offline = await eventually(
      () => {
        const v = c.getAccelerator(fpga.id);
        return v.state === 'offline' ? v : undefined;
      },
      { what: 'accelerator offline', timeoutMs: 5000 },
    );
    expect(offline.allocations).toHaveLength(1);
    expect(c.listAccelerators().every((a) => a.state === 'offline')).toBe(true);
    rt.agents[0]!.heartbeat();
    await eventually(() => c.getAccelerator(fpga.id).state === 'attached', { what: 'back to attached', timeoutMs: 5000 });
    expect(c.getAccelerator(fpga.id).allocations).toHaveLength(1);
    const hostLog = await c.history('compute-1');
    expect(hostLog.map((t) => t.to)).toEqual(['stale', 'lost', 'online']);
  });

  it('routine heartbeats keep a host online past staleAfter without a transition; silence still makes it stale', async () => {
    rt = await startStack({ timing: { staleAfterMs: 1_000, lostAfterMs: 60_000 } });
    const c = rt.conductor;
    // Beats for 2.5 staleAfter periods: the stale timer fires twice and re-arms from the last beat.
    for (const until = Date.now() + 2_500; Date.now() < until; ) {
      rt.agents[0]!.heartbeat();
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(c.getHost('compute-1').state).toBe('online');
    expect(Date.parse(c.getHost('compute-1').lastHeartbeatAt!)).toBeGreaterThan(Date.now() - 1_000);
    const silentSince = Date.now();
    await eventually(() => c.getHost('compute-1').state === 'stale', { what: 'host stale', timeoutMs: 5_000 });
    expect(Date.now() - silentSince).toBeGreaterThanOrEqual(900);
    expect((await c.history('compute-1')).map((t) => t.to)).toEqual(['stale']);
  });

  it('reconciles a new inventory: missing and free → removed, missing but attached → flagged, back → rediscovered, never duplicated', async () => {
    rt = await startStack({ fake: { gpus: 2 } });
    const c = rt.conductor;
    const [gpu0, gpu1] = c.listAccelerators({ type: 'GPU' });
    await c.act(gpu1!.id, { type: 'ENABLE' });
    await c.attach(gpu1!.id, { instanceUuid: 'vm-1' });
    const fake = rt.fakes[0]!;
    fake.unplug(gpu0!.deviceUuid);
    fake.unplug(gpu1!.deviceUuid);
    await rt.agents[0]!.discoverAndReport();
    expect(c.getAccelerator(gpu0!.id).state).toBe('removed');
    expect(c.getAccelerator(gpu1!.id)).toMatchObject({ state: 'attached', missing: true });
    fake.unplug(gpu0!.deviceUuid, false);
    fake.unplug(gpu1!.deviceUuid, false);
    await rt.agents[0]!.discoverAndReport();
    expect(c.getAccelerator(gpu0!.id).state).toBe('inactive');
    expect(c.getAccelerator(gpu1!.id)).toMatchObject({ state: 'attached', missing: false });
    const before = c.listAccelerators().length;
    await rt.agents[0]!.register();
    await rt.agents[0]!.discoverAndReport();
    expect(c.listAccelerators()).toHaveLength(before);
  });

  it('hosts several agents, each with its own accelerators and stable ids', async () => {
    rt = await startStack({ hosts: ['compute-1', 'compute-2.example.org'], fake: { gpus: 1, nics: 1, vfsPerNic: 2 } });
    const c = rt.conductor;
    expect(c.listHosts().map((h) => [h.name, h.state, h.accelerators])).toEqual([
      ['compute-1', 'online', 4],
      ['compute-2.example.org', 'online', 4],
    ]);
    expect(c.listAccelerators({ host: 'compute-2.example.org', type: 'FPGA' })[0]!.name).toBe('compute-2_example_org_FakeDevice');
    const ids = c.listAccelerators().map((a) => a.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
