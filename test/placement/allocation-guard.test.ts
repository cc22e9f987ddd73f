import { afterEach, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { startStack, type Stack } from '../support/stack.js';
import { eventually } from '../support/eventually.js';
import { allocate, deleteTree, uniqueHost } from './harness.js';

/**
 * Never below an allocation: Nova's scheduler has claimed an accelerator in Placement for an
 * instance whose ARQ is not bound yet, so Cyborg's own records show it free. An operator who
 * disables it is refused, naming the consumer, until the claim is gone.
 */
describe.skipIf(!svc.placement)('operator actions under a Placement allocation', () => {
  const url = svc.placement!;
  let s: Stack | undefined;
  let host = '';

  afterEach(async () => {
    if (!s) return;
    await s.stop();
    await deleteTree(s.placement, host);
    s = undefined;
  });

  it('refuses disable with 409 naming the consumer while Placement holds an allocation, and allows it once the allocation is deleted', async () => {
    host = uniqueHost('guard');
    s = await startStack({ hosts: [host], fake: { gpus: 1, nics: 0 }, placement: { url, createRoots: true }, api: true });
    const stack = s;
    const gpu = stack.conductor.listAccelerators().find((a) => a.name.includes('fake_gpu'))!;
    expect((await stack.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${gpu.id}/enable` })).statusCode).toBe(200);
    await eventually(async () => (await stack.placement.getInventories(gpu.rpUuid).catch(() => null))?.inventories[gpu.resourceClass!]?.reserved === 0, {
      what: 'the enabled GPU free in Placement',
      timeoutMs: 15_000,
    });

    // The scheduler claims it; no ARQ is bound, so Cyborg sees a ready, unattached accelerator.
    const consumer = await allocate(stack.placement, gpu.rpUuid, gpu.resourceClass!, 1);
    expect(stack.conductor.getAccelerator(gpu.id).state).toBe('ready');

    const refused = await stack.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${gpu.id}/disable` });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'accelerator.allocated', consumers: [consumer], action: 'DISABLE', rpUuid: gpu.rpUuid });
    expect(refused.json().message).toContain(consumer);
    expect(stack.conductor.getAccelerator(gpu.id).state).toBe('ready');

    await stack.placement.deleteAllocations(consumer);
    const disabled = await stack.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${gpu.id}/disable` });
    expect(disabled.statusCode).toBe(200);
    expect(disabled.json().state).toBe('inactive');
  });
});
