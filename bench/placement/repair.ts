import type { Logger } from 'pino';
import type { Conductor } from '../../actors/conductor/index.js';
import { PlacementSync } from '../../actors/services/index.js';
import { PlacementClient } from '../../openstack/placement/index.js';
import type { AcceleratorView } from '../../model/index.js';

const CHANGES = 100;

/**
 * Repairs 100 out-of-band changes (traits and inventories edited by hand) in one full pass of a
 * warm sync, against a cold one (no remembered generations: it reads every provider). Placement
 * must already hold the converged fleet.
 */
export async function repair(url: string, conductor: Conductor, concurrency: number, log: Logger): Promise<void> {
  const client = (): PlacementClient => new PlacementClient({ url, token: 'admin', timeoutMs: 60_000 });
  const sync = (c: PlacementClient): PlacementSync =>
    new PlacementSync({ source: conductor, client: c, log, resourceProviderName: '{host}', createRootProviders: true, intervalMs: 3_600_000, concurrency });
  const views = conductor.listAccelerators();
  const hand = client();
  const cw = client();
  const warm = sync(cw);
  warm.start();
  await warm.reconcileNow();
  await scribble(hand, views.slice(0, CHANGES));
  const before = cw.requests;
  let t = performance.now();
  await warm.reconcileNow();
  const repairMs = performance.now() - t;
  const requests = cw.requests - before;
  await verify(hand, views.slice(0, CHANGES));
  warm.stop();

  await scribble(hand, views.slice(CHANGES, 2 * CHANGES));
  const cold = sync(client());
  t = performance.now();
  cold.start();
  await cold.reconcileNow();
  const coldMs = performance.now() - t;
  await verify(hand, views.slice(CHANGES, 2 * CHANGES));
  cold.stop();
  console.log(`repair ${CHANGES} out-of-band changes (one full pass over ${views.length}): ${(repairMs / 1000).toFixed(2)} s, ${requests} requests`);
  console.log(`  baseline, cold reconciler reading every provider: ${(coldMs / 1000).toFixed(2)} s → ${(coldMs / repairMs).toFixed(2)}× our time`);
}

/** Trait deleted by hand on even ones, inventory total edited by hand on odd ones. */
async function scribble(c: PlacementClient, vs: AcceleratorView[]): Promise<void> {
  for (const [i, v] of vs.entries()) {
    if (i % 2 === 0) {
      const t = await c.getTraits(v.rpUuid);
      await c.putTraits(
        v.rpUuid,
        t.generation,
        t.traits.filter((x) => x !== 'OWNER_CYBORG'),
      );
    } else {
      const inv = await c.getInventories(v.rpUuid);
      await c.putInventories(v.rpUuid, inv.generation, { [v.resourceClass!]: { total: v.capacity + 5, max_unit: v.capacity + 5 } });
    }
  }
}

async function verify(c: PlacementClient, vs: AcceleratorView[]): Promise<void> {
  for (const v of vs) {
    const [t, inv] = await Promise.all([c.getTraits(v.rpUuid), c.getInventories(v.rpUuid)]);
    if (!t.traits.includes('OWNER_CYBORG') || inv.inventories[v.resourceClass!]?.total !== v.capacity) {
      throw new Error(`provider ${v.name} was not repaired`);
    }
  }
}
