import { afterEach, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { allInSync, enableInPlacement, placementSums, reservedBecomes, startSynced, stopAndTidy, type Synced } from '../placement/harness.js';
import { eventually } from '../support/eventually.js';

/** A maintenance mark as Nova's scheduler sees it: an idle device reserved at once; one an instance holds stays the instance's (used), nothing free either way. */
describe.skipIf(!svc.placement)('maintenance in a real Placement', () => {
  const url = svc.placement!;
  let s: Synced | undefined;

  afterEach(async () => {
    await stopAndTidy(s);
    s = undefined;
  });

  it('reserves a marked device at once and frees it when the mark is cancelled', async () => {
    s = await startSynced({ url, createRoots: true, fake: { gpus: 1, nics: 0 } });
    await allInSync(s);
    const gpu = s.accelerator('fake_gpu_40');
    await enableInPlacement(s, gpu);
    await s.conductor.act(gpu.id, { type: 'MAINTAIN', scope: 'device' });
    await reservedBecomes(s, gpu.rpUuid, 'PGPU', 1, 'the marked GPU reserved');
    await s.conductor.act(gpu.id, { type: 'END_MAINTENANCE', scope: 'device' });
    await reservedBecomes(s, gpu.rpUuid, 'PGPU', 0, 'the GPU back in service');
    // Marked under an instance: it stays attached, and its one slot is the instance's (used, by
    // cyborg's hold: the operator's attach had no Nova allocation), so nothing is left to reserve.
    await s.conductor.attach(gpu.id, { instanceUuid: '2b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e11' });
    await s.conductor.act(gpu.id, { type: 'MAINTAIN', scope: 'device' });
    expect(s.conductor.getAccelerator(gpu.id).state).toBe('attached');
    await eventually(async () => (await placementSums(s!)).PGPU?.used === 1, { what: 'the held GPU used in Placement' });
    await reservedBecomes(s, gpu.rpUuid, 'PGPU', 0, 'nothing idle to reserve');
  });
});
