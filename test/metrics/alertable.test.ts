import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Metrics } from '../../metrics/index.js';
import type { AcceleratorView } from '../../model/index.js';
import { startStack, type Stack } from '../support/stack.js';
import { parseProm, select, type Sample } from './prom-text.js';

/**
 * The on-call operator's view of a fleet: a quarantine, a recovery and a drain each show as a
 * change of the series the shipped alerts read (deploy/prometheus/), one `warn` line naming the
 * device, its host, the reason and who holds it, and an audit row named for what happened.
 */
const base = '/cyborg/v1';
const HOST = 'compute-1';
const vm = '5d7f0a11-2b9c-4e0c-8f3a-0c1d2e3f4a5b';
const timing = { driverOpTimeoutMs: 5_000, healthEnterAfter: 3, healthLeaveAfter: 3, healthStableMs: 0 };

let s: Stack;
let metrics: Metrics;

beforeEach(async () => {
  s = await startStack({ api: true, fake: { gpus: 2 }, timing, agent: { healthIntervalMs: 0, telemetryIntervalMs: 0 } });
  metrics = new Metrics('conductor');
  metrics.watchConductor(s.conductor);
});
afterEach(async () => {
  await s.stop();
});

const post = (url: string, payload: object = {}) => s.app.inject({ method: 'POST', url: `${base}${url}`, payload });
const scrape = async (): Promise<Sample[]> => parseProm(await metrics.text());
const gpus = (): AcceleratorView[] => s.conductor.listAccelerators({ type: 'GPU' }).sort((a, b) => a.name.localeCompare(b.name));
const warnings = (msg: RegExp) => s.lines.filter((l) => l.level === 40 && msg.test(String(l.msg)));

async function polls(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await s.agents[0]!.checkHealth();
    for (const a of s.conductor.listAccelerators()) await s.conductor.tree.acceleratorActor(a.id).flushed();
  }
}

async function events(id: string): Promise<string[]> {
  return (await s.conductor.history(id)).map((r) => r.event);
}

describe('alertable health', () => {
  it('a quarantine of a held GPU and its recovery: series, one warn line each naming the consumer, audit rows that say so', async () => {
    for (const g of gpus()) expect((await post(`/accelerators/${g.id}/enable`)).statusCode).toBe(200);
    const [held] = gpus();
    await s.conductor.attach(held!.id, { instanceUuid: vm, projectId: 'p-1' });
    let m = await scrape();
    expect(select(m, 'cyborg_accelerator_health', { accelerator: held!.id })).toEqual([
      { name: 'cyborg_accelerator_health', labels: expect.objectContaining({ host: HOST, status: 'ok', severity: 'none', reason_class: 'none' }), value: 1 },
    ]);
    expect(select(m, 'cyborg_accelerator_health_changes_total', { change: 'quarantined', severity: 'transient' })[0]!.value).toBe(0);

    s.fakes[0]!.injectHealthFault(held!.id, 'transient', 'Xid 94: contained ECC error');
    await polls(1);
    expect(warnings(/degraded/)).toHaveLength(1);
    await polls(2);
    m = await scrape();
    // The alert "quarantined device held by an instance" joins these two series.
    expect(select(m, 'cyborg_accelerator_health', { accelerator: held!.id })[0]!.labels).toMatchObject({
      status: 'quarantined',
      severity: 'transient',
      reason_class: 'xid',
    });
    expect(select(m, 'cyborg_accelerator_consumers', { accelerator: held!.id })[0]!.value).toBe(1);
    expect(select(m, 'cyborg_accelerator_health_changes_total', { change: 'quarantined', severity: 'transient' })[0]!.value).toBe(1);
    expect(select(m, 'cyborg_accelerator_health_changes_total', { change: 'degraded', severity: 'transient' })[0]!.value).toBe(1);
    const [quarantined] = warnings(/quarantined/);
    expect(warnings(/quarantined/)).toHaveLength(1);
    expect(quarantined).toMatchObject({ acceleratorId: held!.id, host: HOST, change: 'QUARANTINED', reason: 'Xid 94: contained ECC error', consumers: [vm] });

    s.fakes[0]!.recover(held!.id);
    await polls(3);
    m = await scrape();
    expect(select(m, 'cyborg_accelerator_health', { accelerator: held!.id })[0]!.labels).toMatchObject({ status: 'ok' });
    expect(select(m, 'cyborg_accelerator_health_changes_total', { change: 'recovered' })[0]!.value).toBe(1);
    expect(warnings(/recovered/)).toEqual([
      expect.objectContaining({ acceleratorId: held!.id, change: 'RECOVERED', was: 'Xid 94: contained ECC error', consumers: [vm] }),
    ]);
    expect((await events(held!.id)).filter((e) => /^(DEGRADED|QUARANTINED|RECOVERED)$/.test(e))).toEqual(['DEGRADED', 'QUARANTINED', 'RECOVERED']);
    const audit = await s.conductor.audit({ event: 'quarantined', id: held!.id, limit: 10 });
    expect(audit.entries).toEqual([
      expect.objectContaining({
        event: 'QUARANTINED',
        from: 'attached',
        to: 'attached',
        reason: 'Xid 94: contained ECC error',
        args: expect.objectContaining({ health: 'degraded→quarantined' }),
      }),
    ]);
  });

  it("a drain: the host's drain series while instances remain, a warn line when the last one leaves and when it is lifted", async () => {
    for (const g of gpus()) expect((await post(`/accelerators/${g.id}/enable`)).statusCode).toBe(200);
    const [held] = gpus();
    await s.conductor.attach(held!.id, { instanceUuid: vm });
    expect(select(await scrape(), 'cyborg_host_drain_started_timestamp_seconds')).toEqual([]);

    expect((await post(`/hosts/${HOST}/drain`)).statusCode).toBe(200);
    let m = await scrape();
    expect(select(m, 'cyborg_host_drain_started_timestamp_seconds', { host: HOST })[0]!.value).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(select(m, 'cyborg_host_drain_consumers', { host: HOST })[0]!.value).toBe(1);
    expect(select(m, 'cyborg_accelerator_maintenance', { accelerator: held!.id })[0]).toMatchObject({ labels: { mark: 'draining' }, value: 1 });

    await s.conductor.detach(held!.id, { instanceUuid: vm });
    m = await scrape();
    expect(select(m, 'cyborg_host_drain_consumers', { host: HOST })[0]!.value).toBe(0);
    expect(select(m, 'cyborg_accelerator_maintenance', { accelerator: held!.id })[0]).toMatchObject({ labels: { mark: 'maintenance' }, value: 1 });
    expect(warnings(/drain done/)).toEqual([expect.objectContaining({ acceleratorId: held!.id, host: HOST, change: 'DRAINED' })]);

    expect((await s.app.inject({ method: 'DELETE', url: `${base}/hosts/${HOST}/drain` })).statusCode).toBe(200);
    m = await scrape();
    expect(select(m, 'cyborg_host_drain_started_timestamp_seconds')).toEqual([]);
    expect(select(m, 'cyborg_accelerator_maintenance', { mark: 'none' }).length).toBe(s.conductor.listAccelerators().length);
    // One line per device of the host whose drain mark was lifted.
    expect(
      warnings(/drain ended/)
        .map((l) => l.acceleratorId)
        .sort(),
    ).toEqual(
      s.conductor
        .listAccelerators()
        .map((a) => a.id)
        .sort(),
    );
    const history = await s.conductor.history(held!.id);
    expect(history.filter((r) => r.event === 'MAINTAIN' || r.event === 'END_MAINTENANCE').map((r) => r.args?.maintenance)).toEqual(['none→host', 'host→none']);
  });

  it('a host whose agent is lost shows every device of it as unknown, and the host as lost', async () => {
    await s.stop();
    s = await startStack({ api: true, fake: { gpus: 1 }, timing: { ...timing, heartbeatIntervalMs: 50, staleAfterMs: 200, lostAfterMs: 400 } });
    metrics = new Metrics('conductor');
    metrics.watchConductor(s.conductor);
    const [gpu] = gpus();
    expect(select(await scrape(), 'cyborg_host_state', { host: HOST })[0]?.labels.state).toBe('online');
    await s.agents[0]!.stop();
    await expect.poll(async () => select(await scrape(), 'cyborg_host_state', { host: HOST })[0]?.labels.state, { timeout: 10_000 }).toBe('lost');
    expect(select(await scrape(), 'cyborg_accelerator_health', { accelerator: gpu!.id })[0]!.labels.status).toBe('unknown');
  });
});
