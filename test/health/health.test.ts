import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HealthMessage } from '../../bus/schemas.js';
import { Subjects } from '../../bus/subjects.js';
import type { AcceleratorView } from '../../model/index.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * An operator's stories of misbehaving hardware, through the whole in-process stack: the fake
 * driver scripts the faults, the agent polls them (here one poll at a time, `checkHealth()`),
 * the conductor judges them, the operator API shows and fixes them.
 */
const base = '/cyborg/v1';
const vm = '2b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e11';
// Three bad checks quarantine, three good ones return; no minimum calm here (the machine's own
// tests hold the time rule, and an integration test must not wait for a clock).
const timing = { driverOpTimeoutMs: 5_000, healthEnterAfter: 3, healthLeaveAfter: 3, healthStableMs: 0 };

let s: Stack;

beforeEach(async () => {
  s = await startStack({ api: true, fake: { gpus: 2 }, timing });
});
afterEach(async () => {
  await s.stop();
});

const gpus = (): AcceleratorView[] => s.conductor.listAccelerators({ type: 'GPU' }).sort((a, b) => a.name.localeCompare(b.name));
const view = (id: string): AcceleratorView => s.conductor.getAccelerator(id);
const post = (url: string, payload: object = {}) => s.app.inject({ method: 'POST', url: `${base}${url}`, payload });

async function enabledGpus(): Promise<[AcceleratorView, AcceleratorView]> {
  for (const g of gpus()) expect((await post(`/accelerators/${g.id}/enable`)).statusCode).toBe(200);
  const [a, b] = gpus();
  return [a!, b!];
}

/** Polls the agent's drivers `n` times, each poll judged before the next. */
async function polls(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await s.agents[0]!.checkHealth();
    await s.conductor.listAccelerators().reduce((p, a) => p.then(() => s.conductor.tree.acceleratorActor(a.id).flushed()), Promise.resolve());
  }
}

async function healthChanges(id: string): Promise<string[]> {
  return (await s.conductor.history(id)).filter((r) => /^(DEGRADED|QUARANTINED|RECOVERED)$/.test(r.event)).map((r) => r.event);
}

describe('device health', () => {
  it('quarantines a flapping device once, keeps its sibling and host in service, and returns it by itself when stable', async () => {
    const [flaky, sibling] = await enabledGpus();
    s.fakes[0]!.injectHealthFault(flaky.id, 'flapping', 'Xid 31: MMU fault');
    await polls(40);
    expect(view(flaky.id).health).toMatchObject({ status: 'quarantined', fatal: false, reason: 'Xid 31: MMU fault' });
    expect(view(flaky.id).tags).toEqual(expect.arrayContaining(['quarantined', 'reserved']));
    expect(view(flaky.id).allowed).not.toContain('ATTACH');
    // Forty flapping checks made two visible changes (degraded, then quarantined), not forty.
    expect(await healthChanges(flaky.id)).toEqual(['DEGRADED', 'QUARANTINED']);
    expect(view(sibling.id)).toMatchObject({ health: { status: 'ok' }, allowed: expect.arrayContaining(['ATTACH']) });
    expect(s.conductor.getHost('compute-1').state).toBe('online');

    s.fakes[0]!.recover(flaky.id);
    await polls(3);
    expect(view(flaky.id).health).toMatchObject({ status: 'ok', fatal: false });
    expect(view(flaky.id).tags).not.toContain('reserved');
    expect(view(flaky.id).allowed).toContain('ATTACH');
    expect(await healthChanges(flaky.id)).toEqual(['DEGRADED', 'QUARANTINED', 'RECOVERED']);
  });

  it('keeps a fatal device out until the operator resets it, and never takes it from its instance', async () => {
    const [held, idle] = await enabledGpus();
    expect((await post(`/accelerators/${held.id}/attach`, { instanceUuid: vm })).statusCode).toBe(200);
    s.fakes[0]!.injectHealthFault(held.id, 'fatal', 'Xid 79: fallen off the bus');
    s.fakes[0]!.injectHealthFault(idle.id, 'fatal', 'Xid 48: double-bit ECC');
    await polls(1);
    for (const id of [held.id, idle.id]) expect(view(id).health).toMatchObject({ status: 'quarantined', fatal: true });
    // Good checks do not bring a fatal fault back.
    s.fakes[0]!.recover(held.id);
    await polls(5);
    expect(view(held.id).health?.status).toBe('quarantined');

    // The instance keeps its device: no detach, and no reset under it.
    expect(view(held.id)).toMatchObject({ state: 'attached', allocations: [{ instanceUuid: vm }] });
    const refused = await post(`/accelerators/${held.id}/reset`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().code).toBe('accelerator.transition_invalid');
    // Clearing is the operator's call while it is in use.
    const cleared = await post(`/accelerators/${held.id}/clear-health`);
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json()).toMatchObject({ state: 'attached', health: { status: 'ok' } });

    // The idle one is reset through its driver, and stays healthy afterwards.
    const reset = await post(`/accelerators/${idle.id}/reset`);
    expect(reset.statusCode).toBe(200);
    expect(reset.json()).toMatchObject({ state: 'ready', health: { status: 'ok', fatal: false } });
    expect(s.fakes[0]!.calls.filter((c) => c.op === 'reset').map((c) => c.deployableUuid)).toEqual([idle.id]);
    await polls(2);
    expect(view(idle.id).health?.status).toBe('ok');
    // Nothing to clear on a healthy device.
    expect((await post(`/accelerators/${idle.id}/clear-health`)).statusCode).toBe(409);
  });

  it('takes a device flapping at 10 Hz as one quarantine: two visible changes, not fifty, and a bounded history', async () => {
    const [flaky, sibling] = await enabledGpus();
    s.fakes[0]!.injectHealthFault(flaky.id, 'flapping', 'PCIe link flapping');
    const logBefore = (await s.conductor.history(flaky.id)).length;
    // The agent's checks as fast as a misconfigured poll or a chatty driver sends them: 10 a second,
    // none waiting for the conductor's verdict on the one before.
    const sent: Promise<unknown>[] = [];
    for (let i = 0; i < 50; i++) {
      sent.push(s.agents[0]!.checkHealth());
      await new Promise((r) => setTimeout(r, 100));
    }
    await Promise.all(sent);
    await s.conductor.tree.acceleratorActor(flaky.id).flushed();
    expect(view(flaky.id)).toMatchObject({ state: 'ready', health: { status: 'quarantined', fatal: false, reason: 'PCIe link flapping' } });
    expect(await healthChanges(flaky.id)).toEqual(['DEGRADED', 'QUARANTINED']);
    expect((await s.conductor.history(flaky.id)).length - logBefore).toBe(2);
    expect(view(sibling.id).health?.status ?? 'ok').toBe('ok');
  });

  it('drops a health check for a device nobody knows, and a malformed one, without harm', async () => {
    const [gpu] = await enabledGpus();
    s.bus.publish(Subjects.report('health', 'compute-1'), HealthMessage, {
      host: 'compute-1',
      agentId: 'agent-x',
      at: Date.now(),
      checks: [{ deployableUuid: 'no-such-deployable', healthy: false, severity: 'fatal', reason: 'ghost' }],
    });
    s.bus.publish(Subjects.report('health', 'compute-1'), HealthMessage, { host: 'compute-1', checks: 'not a list' } as never);
    s.bus.publish(Subjects.report('health', 'nowhere'), HealthMessage, { host: 'nowhere', agentId: 'agent-y', at: Date.now(), checks: [] });
    await eventually(() => s.lines.some((l) => l.msg.includes('health checks for deployables this host does not have')), { what: 'the unknown device logged' });
    await eventually(() => s.lines.some((l) => l.msg.includes('health checks from a host that has not registered')), { what: 'the unknown host logged' });
    expect(view(gpu.id)).toMatchObject({ state: 'ready', health: { status: 'ok' } });
    expect(s.conductor.listAccelerators().every((a) => a.health?.status === 'ok')).toBe(true);
  });
});
