import { afterAll, describe, expect, it } from 'vitest';
import { retireHost, type ForgettingJournal } from '../../actors/conductor/index.js';
import { svc } from '../services.js';
import { allInSync, startSynced, stopAndTidy, type Synced } from './harness.js';
import { eventually } from '../support/eventually.js';

/** A lost host deleted: the resource providers of its accelerators leave the real Placement too. */
describe.skipIf(!svc.placement)('host delete and Placement', () => {
  let s: Synced | undefined;
  afterAll(async () => {
    await stopAndTidy(s);
  });

  it('removes the providers of every accelerator of the host', async () => {
    s = await startSynced({
      url: svc.placement!,
      createRoots: true,
      intervalMs: 200,
      fake: { gpus: 1, nics: 0 },
      timing: { heartbeatIntervalMs: 50, staleAfterMs: 300, lostAfterMs: 600 },
    });
    await allInSync(s);
    const rps = s.conductor.listAccelerators().map((a) => a.rpUuid);
    for (const rp of rps) expect(await s.client.getProvider(rp)).not.toBeNull();
    await s.agents[0]!.stop();
    await eventually(() => s!.conductor.getHost(s!.host).state === 'lost', { what: 'the host lost' });

    const retired = await retireHost(s.conductor, s.journal as unknown as ForgettingJournal, s.host, { actor: 'ops-bob' }, s.log);
    expect(retired.accelerators).toHaveLength(rps.length);
    await eventually(async () => (await Promise.all(rps.map((rp) => s!.client.getProvider(rp)))).every((p) => p === null), {
      what: 'the providers gone from Placement',
      timeoutMs: 15_000,
    });
    expect(s.conductor.listHosts().map((h) => h.name)).not.toContain(s.host);
  });
});
