import { afterEach, describe, expect, it } from 'vitest';
import { FakeDriver } from '../../drivers/fake/index.js';
import { desiredOf } from '../../openstack/placement/desired.js';
import type { AcceleratorView } from '../../model/index.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * An operator drains a host to service it, and meanwhile a card is plugged in (or one pulled
 * earlier comes back): the drain covers it too. It starts marked for maintenance and reserved in
 * Placement, takes no instance, and leaves with the drain when it is cancelled.
 */
const base = '/cyborg/v1';
const vm = '2b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e11';

let s: Stack;
afterEach(async () => {
  await s.stop();
});

const req = (method: 'GET' | 'POST' | 'DELETE', url: string) => s.app.inject({ method, url: `${base}${url}`, ...(method === 'POST' ? { payload: {} } : {}) });
const view = (id: string): AcceleratorView => s.conductor.getAccelerator(id);
const usable = (id: string): boolean => {
  const d = desiredOf(view(id));
  return d.ok && d.desired.usable;
};
const gpus = (): AcceleratorView[] => s.conductor.listAccelerators({ type: 'GPU' }).sort((a, b) => a.name.localeCompare(b.name));

describe('a host drain and the devices that appear during it', () => {
  it('marks and reserves a card plugged in during the drain, and one that comes back, and lets both go with the drain', async () => {
    let cards = 2;
    s = await startStack({ api: true, drivers: (host) => [new FakeDriver({ host, gpus: cards, nics: 0 })] });
    const [held, pulled] = gpus();
    for (const g of [held!, pulled!]) expect((await req('POST', `/accelerators/${g.id}/enable`)).statusCode).toBe(200);
    expect((await s.app.inject({ method: 'POST', url: `${base}/accelerators/${held!.id}/attach`, payload: { instanceUuid: vm } })).statusCode).toBe(200);

    // One card is pulled before the drain starts: the drain does not mark what is not there.
    s.fakes[0]!.unplug(pulled!.deviceUuid);
    await s.agents[0]!.discoverAndReport();
    expect(view(pulled!.id).state).toBe('removed');
    const drained = await req('POST', '/hosts/compute-1/drain');
    expect(drained.statusCode).toBe(200);
    expect(drained.json()).toMatchObject({ state: 'draining' });

    // It comes back, and a third card is plugged in: the agent, restarted, reports both.
    cards = 3;
    await s.restartAgent();
    const added = gpus().find((g) => g.id !== held!.id && g.id !== pulled!.id)!;
    expect(added).toBeDefined();
    for (const id of [pulled!.id, added.id]) {
      expect(view(id).maintenance).toMatchObject({ scopes: ['host'], mark: 'maintenance' });
      expect(view(id).tags).toEqual(expect.arrayContaining(['maintenance', 'reserved']));
      expect(usable(id)).toBe(false);
    }
    // Enabled, the new card still takes nobody while the host drains.
    expect((await req('POST', `/accelerators/${added.id}/enable`)).statusCode).toBe(200);
    expect(usable(added.id)).toBe(false);
    expect((await s.app.inject({ method: 'POST', url: `${base}/accelerators/${added.id}/attach`, payload: { instanceUuid: vm } })).statusCode).toBe(409);
    const audit = (await s.conductor.history(added.id)).map((r) => `${r.event}:${r.actor ?? ''}`);
    expect(audit).toEqual(expect.arrayContaining(['DISCOVERED:agent:' + s.agents[0]!.agentId, 'MAINTAIN:conductor']));

    // The drain's view counts them; cancelling it lets every device go, the new ones included.
    const all = (await req('GET', '/hosts/compute-1/drain')).json() as { state: string; accelerators: AcceleratorView[] };
    expect(all.state).toBe('draining');
    expect(all.accelerators.every((a) => a.maintenance?.scopes.includes('host'))).toBe(true);
    expect((await req('DELETE', '/hosts/compute-1/drain')).statusCode).toBe(200);
    for (const id of [pulled!.id, added.id]) expect(view(id).maintenance ?? null).toBeNull();
    expect(usable(added.id)).toBe(true);
  });

  it('leaves a device discovered on a host nobody drains alone', async () => {
    let cards = 1;
    s = await startStack({ api: true, drivers: (host) => [new FakeDriver({ host, gpus: cards, nics: 0 })] });
    cards = 2;
    await s.restartAgent();
    for (const g of gpus()) expect(g.maintenance ?? null).toBeNull();
  });
});
