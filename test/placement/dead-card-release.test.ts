import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { startStack, type Stack } from '../support/stack.js';
import { eventually } from '../support/eventually.js';
import { deleteTree, uniqueHost } from './harness.js';

/**
 * A GPU dies under an instance that holds two: the operator releases the instance from the dead
 * one. In the real Placement the instance's allocation on that GPU's provider is gone and its
 * allocation on the other GPU stays; in Cyborg the card stays in error, flagged.
 */
describe.skipIf(!svc.placement)('releasing an instance from a dead card frees its allocation there in Placement', () => {
  const url = svc.placement!;
  let s: Stack | undefined;
  let host = '';

  afterEach(async () => {
    if (!s) return;
    await s.stop();
    await deleteTree(s.placement, host);
    s = undefined;
  });

  it("takes the dead card's provider out of the instance's allocations, and leaves the rest", async () => {
    host = uniqueHost('deadcard');
    s = await startStack({ hosts: [host], fake: { gpus: 2, nics: 0 }, placement: { url, createRoots: true }, api: true, timing: { driverOpTimeoutMs: 2_000 } });
    const stack = s;
    const [dead, alive] = stack.conductor
      .listAccelerators()
      .filter((a) => a.name.includes('fake_gpu'))
      .sort((a, b) => a.name.localeCompare(b.name));
    for (const g of [dead!, alive!]) {
      expect((await stack.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${g.id}/enable` })).statusCode).toBe(200);
      await eventually(async () => (await stack.placement.getInventories(g.rpUuid).catch(() => null))?.inventories[g.resourceClass!]?.reserved === 0, {
        what: `${g.name} free in Placement`,
        timeoutMs: 15_000,
      });
    }
    // Nova's claim for the instance on both GPUs, then the attaches.
    const vm = randomUUID();
    await stack.placement.putAllocations(vm, {
      allocations: { [dead!.rpUuid]: { resources: { [dead!.resourceClass!]: 1 } }, [alive!.rpUuid]: { resources: { [alive!.resourceClass!]: 1 } } },
      project_id: randomUUID(),
      user_id: randomUUID(),
      consumer_generation: null,
    });
    for (const g of [dead!, alive!]) await stack.conductor.attach(g.id, { instanceUuid: vm });

    // The first GPU falls off the bus: its detach fails and it sits in error holding the instance.
    stack.fakes[0]!.injectFailure('detach', 'GPU has fallen off the bus', 1_000);
    await stack.conductor.detach(dead!.id, { instanceUuid: vm }).catch(() => undefined);
    await eventually(() => stack.conductor.getAccelerator(dead!.id).state === 'error', { what: 'the dead card in error' });

    const released = await stack.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${dead!.id}/release`, payload: { instanceUuid: vm } });
    expect(released.statusCode, released.body).toBe(200);
    expect(released.json()).toMatchObject({ state: 'error', allocations: [] });
    const left = await stack.placement.call<{ allocations: Record<string, { resources: Record<string, number> }> }>('GET', `/allocations/${vm}`, {
      microversion: '1.39',
    });
    expect(Object.keys(left.allocations)).toEqual([alive!.rpUuid]);
    expect(left.allocations[alive!.rpUuid]!.resources).toEqual({ [alive!.resourceClass!]: 1 });
    expect(stack.conductor.getAccelerator(alive!.id).allocations.map((a) => a.instanceUuid)).toEqual([vm]);
    await stack.placement.deleteAllocations(vm);
  });
});
