import { afterEach, describe, expect, it } from 'vitest';
import { FakeDriver } from '../../drivers/fake/index.js';
import { desiredOf } from '../../openstack/placement/desired.js';
import type { AcceleratorView } from '../../model/index.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * An operator reboots a compute host whose GPUs run two instances — and the host comes back
 * re-imaged: the agent's cache is gone with the disk, and the kernel forgot the mdevs (the fake
 * driver's made handles) too. The conductor compares what the agent reports with what the
 * instances hold, has the driver make the lost handles again, and flags what it cannot bring back
 * on the accelerator, leaving the instance attached.
 */
const base = '/cyborg/v1';
const vm1 = '2b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e11';
const vm2 = '7d4f0a8c-5b2e-4c1d-9e3f-0a1b2c3d4e5f';

let s: Stack;
afterEach(async () => {
  await s?.stop();
});

/** How the host boots next: with a card pulled, or a driver that refuses to make handles again. */
let nextBoot: (driver: FakeDriver) => void = () => undefined;

const boot = (host: string): FakeDriver[] => {
  const d = new FakeDriver({ host, gpus: 2, nics: 0 });
  nextBoot(d);
  return [d];
};
const view = (id: string): AcceleratorView => s.conductor.getAccelerator(id);
const gpus = (): AcceleratorView[] => s.conductor.listAccelerators({ type: 'GPU' }).sort((a, b) => a.name.localeCompare(b.name));

async function attachBoth(): Promise<[AcceleratorView, AcceleratorView]> {
  const [a, b] = gpus();
  for (const [g, vm] of [
    [a!, vm1],
    [b!, vm2],
  ] as const) {
    expect((await s.app.inject({ method: 'POST', url: `${base}/accelerators/${g.id}/enable`, payload: {} })).statusCode).toBe(200);
    const r = await s.app.inject({ method: 'POST', url: `${base}/instances/${vm}/attach`, payload: { acceleratorId: g.id } });
    expect(r.statusCode, r.body).toBe(200);
  }
  return [view(a!.id), view(b!.id)];
}

/** The agent process starts again (new drivers: what the kernel made is gone), and the conductor compares. */
async function reboot(): Promise<{ run: NonNullable<ReturnType<Stack['conductor']['rejoins']['get']>> }> {
  const before = s.conductor.rejoins.get('compute-1');
  await s.restartAgent();
  const run = s.conductor.rejoins.get('compute-1');
  expect(run).toBeDefined();
  expect(run).not.toBe(before);
  return { run: run! };
}

describe('an agent that comes back from a reboot without its cache', () => {
  it('gets the handles of Bound ARQs made again, and a card that is gone flagged on its accelerator, its instance left attached', async () => {
    nextBoot = () => undefined;
    s = await startStack({ api: true, drivers: boot });
    const [a, b] = await attachBoth();
    const handleA = a.allocations[0]!.handleUuid;
    const handleB = b.allocations[0]!.handleUuid;
    expect(s.fakes[0]!.hasHostSide(handleA)).toBe(true);

    // The host comes back with the second GPU pulled from it and nothing made on the first.
    nextBoot = (d) => d.unplug(b.deviceUuid);
    const done = await (await reboot()).run;
    expect(done.restored).toEqual([handleA]);
    expect(done.flagged).toEqual([expect.objectContaining({ acceleratorId: b.id, handleUuid: handleB })]);
    expect(s.fakes[0]!.hasHostSide(handleA)).toBe(true);
    expect(s.fakes[0]!.calls.filter((c) => c.op === 'restore').map((c) => c.deployableUuid)).toEqual([a.id]);

    // The first runs on, healthy; the second is still held by its instance, flagged and reserved.
    expect(view(a.id)).toMatchObject({ state: 'attached', health: { status: 'ok' }, missing: false });
    expect(view(b.id)).toMatchObject({ state: 'attached', missing: true, health: { status: 'quarantined', fatal: true } });
    expect(view(b.id).health?.reason).toMatch(/no longer reports this device after it re-joined; instance 7d4f0a8c/);
    expect(view(b.id).allocations.map((x) => x.instanceUuid)).toEqual([vm2]);
    const d = desiredOf(view(b.id));
    expect(d.ok && d.desired.usable).toBe(false);
    expect(s.conductor.listArqs({ instanceUuid: vm2 }).map((x) => x.state)).toEqual(['Bound']);

    // The audit says who did what, and why.
    const historyA = await s.conductor.history(a.id);
    expect(historyA.find((r) => r.event === 'RESTORE')).toMatchObject({ actor: 'conductor', args: { handleUuid: handleA, instanceUuid: vm1 } });
    const historyB = await s.conductor.history(b.id);
    expect(historyB.find((r) => r.event === 'QUARANTINED' && r.actor === 'conductor')?.reason).toMatch(/no longer reports this device/);
    const audited = await s.app.inject({ method: 'GET', url: `${base}/accelerators/${b.id}` });
    expect(audited.json()).toMatchObject({ health: { status: 'quarantined', fatal: true } });
  });

  it("flags a handle its driver refuses to make again, says the driver's reason, and asks nothing twice in one session", async () => {
    nextBoot = () => undefined;
    s = await startStack({ api: true, drivers: boot });
    const [a] = await attachBoth();
    nextBoot = (d) => d.injectFailure('restore', 'mdev type nvidia-35 is no longer offered by the GPU', 5);
    const { run } = await reboot();
    const outcome = await run;
    expect(outcome.restored).toHaveLength(0);
    expect(outcome.flagged.map((f) => f.acceleratorId).sort()).toEqual(
      gpus()
        .map((g) => g.id)
        .sort(),
    );
    expect(view(a.id)).toMatchObject({ state: 'attached', health: { status: 'quarantined', fatal: true } });
    expect(view(a.id).health?.reason).toMatch(/could not make it again: mdev type nvidia-35 is no longer offered/);

    // Another report of the same agent session (a periodic discovery) is not compared again.
    await s.agents[0]!.discoverAndReport();
    expect(s.conductor.rejoins.get('compute-1')).toBe(run);
    expect(s.fakes[0]!.calls.filter((c) => c.op === 'restore')).toHaveLength(2);

    // The operator, once the host is fixed, clears the flag: the device is back in service, still attached.
    const cleared = await s.app.inject({ method: 'POST', url: `${base}/accelerators/${a.id}/clear-health`, payload: {} });
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json()).toMatchObject({ state: 'attached', health: { status: 'ok' }, allocations: [{ instanceUuid: vm1 }] });
  });

  it('asks nothing of a host whose handles survived (an agent reconnecting, a restart with the host side intact)', async () => {
    nextBoot = () => undefined;
    s = await startStack({ api: true, drivers: boot });
    const [a] = await attachBoth();
    // The same driver (the kernel kept its mdevs) under a new agent session: everything present.
    const kept = s.fakes[0]!;
    nextBoot = () => undefined;
    await s.agents[0]!.stop();
    const { Agent } = await import('../../actors/agent/index.js');
    const { DriverRegistry } = await import('../../drivers/registry.js');
    const agent = new Agent({
      host: 'compute-1',
      bus: s.bus,
      drivers: new DriverRegistry([kept]),
      log: s.log,
      heartbeatIntervalMs: 60_000,
      discoveryIntervalMs: 3_600_000,
    });
    await agent.start();
    s.agents[0] = agent;
    const outcome = await s.conductor.rejoins.get('compute-1')!;
    expect(outcome).toMatchObject({ agentId: agent.agentId, restored: [], flagged: [] });
    expect(kept.calls.filter((c) => c.op === 'restore')).toHaveLength(0);
    expect(view(a.id).health?.status).toBe('ok');
  });
});
