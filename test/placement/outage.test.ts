import { afterAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { buildApi } from '../../api/server.js';
import { svc } from '../services.js';
import { allInSync, PrivatePlacement, startSynced, type Synced } from './harness.js';
import { eventually } from '../support/eventually.js';

/**
 * Placement goes away mid-way (its own private instance on another port: the shared one on
 * 8778 is never stopped). Transitions go on; the API says what is not in Placement yet and
 * why; when Placement is back the loop catches up without anyone asking.
 */
// Needs the peer scripts and Placement's packages (present wherever the shared one runs).
describe.skipIf(!svc.placement || !PrivatePlacement.available())('placement sync when Placement stops and comes back', () => {
  const placement = new PrivatePlacement();
  let s: Synced | undefined;

  afterAll(async () => {
    await s?.stop();
    await placement.stop(true);
  });

  it('never blocks transitions, shows them pending, and converges after Placement returns', async () => {
    await placement.start();
    s = await startSynced({ url: placement.url, createRoots: true, intervalMs: 500 });
    await allInSync(s);
    const fpga = s.accelerator('FakeDevice');
    const app = await buildApi({ control: s.conductor, log: pino({ level: 'silent' }) });
    const shown = async (): Promise<{ status: string; reason: string | null } | undefined> => {
      const res = await app.inject({ method: 'GET', url: `/cyborg/v1/accelerators/${fpga.id}` });
      return (res.json() as { placement?: { status: string; reason: string | null } }).placement;
    };
    expect(await shown()).toMatchObject({ status: 'in_sync', reason: null });

    await placement.stop();
    const view = await s.conductor.act(fpga.id, { type: 'ENABLE' });
    expect(view.state).toBe('ready');
    await eventually(async () => (await shown())?.reason?.includes('Placement unavailable'), { what: 'pending because Placement is down', timeoutMs: 15_000 });
    expect((await shown())!.status).toBe('pending');

    await placement.start();
    await eventually(async () => (await s!.client.getInventories(fpga.rpUuid)).inventories.FPGA?.reserved === 0, {
      what: 'enable reached Placement',
      timeoutMs: 60_000,
    });
    await allInSync(s, 60_000);
    expect(await shown()).toMatchObject({ status: 'in_sync', reason: null });
    const list = await app.inject({ method: 'GET', url: '/cyborg/v1/accelerators' });
    const all = (list.json() as { accelerators: { placement?: { status: string } }[] }).accelerators;
    expect(all.every((a) => a.placement?.status === 'in_sync')).toBe(true);
    await app.close();
  });
});
