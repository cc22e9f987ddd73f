/**
 * Issue 42: the page's "in service" count took every card without a maintenance mark, a
 * quarantined one included, though nothing binds it (reserved in Placement). Now such a card is
 * "out of service", and "in service" counts the cards that take new instances.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCELERATOR_STATES } from '../../machines/index.js';
import { baseOrder, NO_FILTERS, select, serviceOf } from '../../ui/src/select.js';
import { startStack, type Stack } from '../support/stack.js';

describe("the page's service counts", () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ fake: { gpus: 3 }, api: true, agent: { healthIntervalMs: 0, telemetryIntervalMs: 0 } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('a quarantined card and one in error are out of service, not in service', async () => {
    const [sick, broken] = s.conductor.listAccelerators({ type: 'GPU' });
    for (const g of s.conductor.listAccelerators({ type: 'GPU' }))
      if (g.id !== broken!.id)
        expect((await s.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${g.id}/enable`, payload: {} })).statusCode).toBe(200);
    s.fakes[0]!.injectHealthFault(sick!.id, 'fatal', 'Xid 79: GPU has fallen off the bus');
    await s.agents[0]!.checkHealth();
    await expect.poll(() => s.conductor.getAccelerator(sick!.id).health?.status).toBe('quarantined');
    s.fakes[0]!.injectFailure('install', 'nvidia-smi: no devices were found');
    await s.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${broken!.id}/enable`, payload: {} });
    expect(s.conductor.getAccelerator(broken!.id).state).toBe('error');

    const views = s.conductor.listAccelerators();
    const byId = new Map(views.map((a) => [a.id, a]));
    const { serviceCounts } = select(baseOrder(views), byId, NO_FILTERS, [...ACCELERATOR_STATES], new Set());
    expect(serviceOf(byId.get(sick!.id)!)).toBe('out of service');
    expect(serviceOf(byId.get(broken!.id)!)).toBe('out of service');
    expect(serviceCounts.get('out of service')).toBe(2);
    expect(serviceCounts.get('in service')).toBe(views.length - 2);
  });
});
