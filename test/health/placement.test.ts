import { afterEach, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { allInSync, enableInPlacement, reservedBecomes, startSynced, stopAndTidy, type Synced } from '../placement/harness.js';

/**
 * A quarantined device as Nova's scheduler sees it, in a real Placement: its inventory reserved
 * while it is out, freed when it returns — and one write for a device that keeps flapping.
 */
describe.skipIf(!svc.placement)('health in a real Placement', () => {
  const url = svc.placement!;
  let s: Synced | undefined;

  afterEach(async () => {
    await stopAndTidy(s);
    s = undefined;
  });

  it('reserves a quarantined device while it is out, whether it flaps or dies, and frees it when it is back', async () => {
    s = await startSynced({
      url,
      createRoots: true,
      fake: { gpus: 2, nics: 0 },
      timing: { driverOpTimeoutMs: 5_000, healthEnterAfter: 3, healthLeaveAfter: 3, healthStableMs: 0 } as never,
    });
    await allInSync(s);
    const flaky = s.accelerator('fake_gpu_40');
    const dead = s.accelerator('fake_gpu_41');
    await enableInPlacement(s, flaky);
    await enableInPlacement(s, dead);
    const poll = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++) await s!.agents[0]!.checkHealth();
    };

    s.fakes[0]!.injectHealthFault(flaky.id, 'flapping');
    s.fakes[0]!.injectHealthFault(dead.id, 'fatal');
    await poll(30);
    await reservedBecomes(s, flaky.rpUuid, 'PGPU', 1, 'the flapping GPU reserved');
    await reservedBecomes(s, dead.rpUuid, 'PGPU', 1, 'the dead GPU reserved');

    s.fakes[0]!.recover(flaky.id);
    await poll(3);
    await reservedBecomes(s, flaky.rpUuid, 'PGPU', 0, 'the recovered GPU back in service');
    await allInSync(s);
    expect((await s.client.getInventories(dead.rpUuid)).inventories.PGPU?.reserved).toBe(1);

    await s.conductor.act(dead.id, { type: 'RESET' });
    await reservedBecomes(s, dead.rpUuid, 'PGPU', 0, 'the reset GPU back in service');
  });
});
