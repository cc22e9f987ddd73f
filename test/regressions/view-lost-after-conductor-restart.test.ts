/**
 * Issue 26: after the only conductor was killed and restarted, the api rebuilt its view from the
 * new conductor's first snapshot, taken before that conductor had taken its hosts back; adopting
 * a host published no accelerator views, so the api lacked them for good (Nova's binds answered
 * 404 "Deployable not found with resource provider") until the api itself was restarted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { viewDiffersFromDb } from '../support/view-equals-db.js';
import { svc } from '../services.js';
import { Deployment } from '../nats/deployment.js';

describe.skipIf(!svc.nats || !svc.postgres)("the api's view after the only conductor restarts", { timeout: 240_000 }, () => {
  let dep: Deployment | undefined;
  let db: Awaited<ReturnType<typeof freshDatabase>> | undefined;
  afterEach(async () => {
    await dep?.stop();
    await db?.drop();
  });

  it('converges to the database after each kill, without restarting the api', async () => {
    db = await freshDatabase('regress_view_after_restart');
    dep = new Deployment(svc.nats!, db.url);
    dep.logsOnFailure();
    await dep.conductor('solo');
    await dep.agent('node-v');
    const api = await dep.api();
    await eventually(() => api.listAccelerators({ host: 'node-v' }).length === 2, { what: "node-v's accelerators in the view" });
    const [gpu] = api.listAccelerators({ host: 'node-v' });
    expect((await api.act(gpu!.id, { type: 'ENABLE' })).state).toBe('ready');

    for (let round = 1; round <= 3; round++) {
      // A new incarnation under a new id, as the default id (host name and a random suffix) gives:
      // it waits for the dead one's leases to expire, then takes its hosts over.
      await dep.procs.find((p) => p.name === (round === 1 ? 'solo' : `solo-${round - 1}`))!.kill('SIGKILL');
      await dep.conductor(`solo-${round}`);
      await eventually(async () => (await viewDiffersFromDb(api, db!.url)).length === 0 && api.listAccelerators({ host: 'node-v' }).length === 2, {
        what: `the view equal to the database after restart ${round}`,
        timeoutMs: 60_000,
      });
      // What Nova does next: a bind names the deployable by its resource provider.
      expect(api.getAcceleratorByRp(gpu!.rpUuid)?.id).toBe(gpu!.id);
    }
    expect(await viewDiffersFromDb(api, db.url)).toEqual([]);
  });
});
