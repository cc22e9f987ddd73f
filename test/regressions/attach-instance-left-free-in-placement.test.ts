/**
 * Issue 39: `cyborg attach-instance` handed a GPU to an instance but left it free in Placement
 * (used 0, reserved 0) and still an allocation candidate, so Nova could place a second instance
 * on it. Now every holder Nova did not allocate for is held by Cyborg in Placement
 * (openstack/placement/holds.ts), and the detach frees exactly that hold.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { allInSync, enableInPlacement, startSynced, stopAndTidy, type Synced } from '../placement/harness.js';
import { eventually } from '../support/eventually.js';

describe.skipIf(!svc.placement)('attach-instance leaves the GPU free in Placement', () => {
  let s: Synced;
  beforeAll(async () => {
    s = await startSynced({ url: svc.placement!, api: true, createRoots: true, fake: { gpus: 1, nics: 0 } });
    await allInSync(s);
  });
  afterAll(() => stopAndTidy(s));

  it('is consumed in Placement and offered to no one while attached, free again once detached', async () => {
    const gpu = s.accelerator('fake_gpu');
    await enableInPlacement(s, gpu);
    const vm = randomUUID();
    const r = await s.app.inject({ method: 'POST', url: `/cyborg/v1/instances/${vm}/attach`, payload: { resourceClass: 'PGPU' } });
    expect(r.statusCode, r.body).toBe(200);
    await eventually(async () => (await s.client.getUsages(gpu.rpUuid)).PGPU === 1, { what: 'the GPU used in Placement', timeoutMs: 15_000 });
    const offered = await s.client.call<{ provider_summaries: Record<string, unknown> }>('GET', '/allocation_candidates?resources=PGPU:1', {
      microversion: '1.29',
    });
    expect(Object.keys(offered.provider_summaries)).not.toContain(gpu.rpUuid);
    expect((await s.app.inject({ method: 'POST', url: `/cyborg/v1/instances/${vm}/detach`, payload: {} })).statusCode).toBe(200);
    await eventually(async () => ((await s.client.getUsages(gpu.rpUuid)).PGPU ?? 0) === 0, { what: 'the GPU free in Placement', timeoutMs: 15_000 });
    expect(await s.client.providerAllocations(gpu.rpUuid)).toEqual({});
  });
});
