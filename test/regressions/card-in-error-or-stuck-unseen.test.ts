/**
 * Issue 42: a card left in `error` (its detach retried every ~5 s) and a transition stuck past
 * its timeout had no series an alert could read, and an operator's `reset` of a quarantined card
 * was no recovery in the metrics and made no log line: the dashboard showed quarantines but
 * never their ends. Now each card's time in its state and the deadline of the operation it runs
 * are series (named by host, name and uuid) that `CyborgAcceleratorInError` and
 * `CyborgTransitionStuck` read, and a reset that clears a bad health is counted `recovered`,
 * logged as one `warn` line and said on its audit row.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Metrics } from '../../metrics/index.js';
import type { FleetSource } from '../../model/index.js';
import { parseProm, select } from '../metrics/prom-text.js';
import { startStack, type Stack } from '../support/stack.js';

const base = '/cyborg/v1';
const HOST = 'compute-1';
const timing = { driverOpTimeoutMs: 5_000, healthEnterAfter: 1, healthLeaveAfter: 1, healthStableMs: 0 };

let s: Stack;
afterEach(async () => {
  await s?.stop();
});

const post = (url: string) => s.app.inject({ method: 'POST', url: `${base}${url}`, payload: {} });
const scrape = async (m: Metrics) => parseProm(await m.text());

describe('a card stuck or in error shows in the series the shipped alerts read', () => {
  it('an enable whose install failed: the card in error, its failed op and its name on the series', async () => {
    s = await startStack({ api: true, fake: { gpus: 1 }, timing });
    const metrics = new Metrics('conductor');
    metrics.watchConductor(s.conductor);
    const [gpu] = s.conductor.listAccelerators({ type: 'GPU' });
    s.fakes[0]!.injectFailure('install', 'nvidia-smi: no devices were found');
    await post(`/accelerators/${gpu!.id}/enable`);
    expect(s.conductor.getAccelerator(gpu!.id).state).toBe('error');
    const [row] = select(await scrape(metrics), 'cyborg_accelerator_state_seconds', { accelerator: gpu!.id });
    expect(row).toMatchObject({ labels: { host: HOST, name: gpu!.name, state: 'error', op: 'install' } });
    expect(row!.value).toBeGreaterThanOrEqual(0);
    expect(row!.value).toBeLessThan(60);
  });

  it('an install running past the deadline the conductor gives it: time in state above the timeout series', async () => {
    s = await startStack({ api: true, fake: { gpus: 1 }, timing });
    // The machine fails an operation at its deadline by itself; a stuck one is a lost timer. The
    // series are read through a fleet whose deadline is shorter than the one the machine keeps.
    const fleet: FleetSource = { hub: s.conductor.hub, hosts: s.conductor.hosts, usage: s.conductor.usage, opDeadlineMs: () => 200 };
    const metrics = new Metrics('conductor');
    metrics.watchConductor(fleet);
    const [gpu] = s.conductor.listAccelerators({ type: 'GPU' });
    s.fakes[0]!.slowDown('install', 2_000);
    const enabling = post(`/accelerators/${gpu!.id}/enable`);
    const installing = async () => select(await scrape(metrics), 'cyborg_accelerator_state_seconds', { accelerator: gpu!.id, op: 'install' })[0]?.value ?? 0;
    await expect.poll(installing, { timeout: 1_900 }).toBeGreaterThan(0.2);
    const m = await scrape(metrics);
    expect(select(m, 'cyborg_accelerator_state_seconds', { accelerator: gpu!.id })[0]!.labels).toMatchObject({
      state: 'installing',
      op: 'install',
      name: gpu!.name,
    });
    expect(select(m, 'cyborg_accelerator_operation_timeout_seconds', { accelerator: gpu!.id })).toEqual([
      {
        name: 'cyborg_accelerator_operation_timeout_seconds',
        labels: expect.objectContaining({ host: HOST, name: gpu!.name, state: 'installing', op: 'install' }),
        value: 0.2,
      },
    ]);
    // A write still under way when its answer is due is answered 202 with the committed
    // `installing` view (issue 41); either way the install ends and its deadline series goes.
    expect([200, 202]).toContain((await enabling).statusCode);
    await expect.poll(() => s.conductor.getAccelerator(gpu!.id).state, { timeout: 5_000 }).toBe('ready');
    expect(select(await scrape(metrics), 'cyborg_accelerator_operation_timeout_seconds')).toEqual([]);
  });

  it("an operator's reset of a quarantined card: counted recovered, one warn line, the audit row says so", async () => {
    s = await startStack({ api: true, fake: { gpus: 1 }, timing, agent: { healthIntervalMs: 0, telemetryIntervalMs: 0 } });
    const metrics = new Metrics('conductor');
    metrics.watchConductor(s.conductor);
    const [gpu] = s.conductor.listAccelerators({ type: 'GPU' });
    expect((await post(`/accelerators/${gpu!.id}/enable`)).statusCode).toBe(200);
    s.fakes[0]!.injectHealthFault(gpu!.id, 'fatal', 'Xid 79: GPU has fallen off the bus');
    await s.agents[0]!.checkHealth();
    await expect.poll(() => s.conductor.getAccelerator(gpu!.id).health?.status).toBe('quarantined');
    const recovered = async () => select(await scrape(metrics), 'cyborg_accelerator_health_changes_total', { change: 'recovered' })[0]!.value;
    expect(await recovered()).toBe(0);

    expect((await post(`/accelerators/${gpu!.id}/reset`)).statusCode).toBe(200);
    expect(s.conductor.getAccelerator(gpu!.id).health?.status ?? 'ok').toBe('ok');
    expect(await recovered()).toBe(1);
    expect(s.lines.filter((l) => l.level === 40 && /recovered/.test(String(l.msg)))).toEqual([
      expect.objectContaining({
        acceleratorId: gpu!.id,
        accelerator: gpu!.name,
        host: HOST,
        change: 'RECOVERED',
        by: 'RESET',
        was: 'Xid 79: GPU has fallen off the bus',
        msg: 'accelerator recovered: reset by an operator, back in service',
      }),
    ]);
    const rows = await s.conductor.history(gpu!.id);
    expect(rows.find((r) => r.from === 'resetting')).toMatchObject({ to: 'ready', args: expect.objectContaining({ health: 'quarantined→ok', by: 'RESET' }) });
  });
});
