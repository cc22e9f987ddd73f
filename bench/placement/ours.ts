import type { Logger } from 'pino';
import type { Conductor } from '../../actors/conductor/index.js';
import { PlacementSync } from '../../actors/services/index.js';
import { PlacementClient } from '../../openstack/placement/index.js';
import type { Tally } from './ceiling.js';

/** When each host's providers were all in sync, in ms from the start, in the order hosts came. */
export interface Converged {
  totalMs: number;
  hostDoneMs: number[];
  tally: Tally;
}

/**
 * Our sync converging the conductor's accelerators into an empty Placement from a cold start (its
 * first, full pass), with `concurrency` requests in flight. A host counts as done when every one
 * of its accelerators says `in_sync`: what Nova sees is then in Placement.
 */
export async function ours(url: string, conductor: Conductor, concurrency: number, log: Logger): Promise<Converged> {
  const tally: Tally = { requests: 0, conflicts: 0, serverErrors: 0 };
  const client = new PlacementClient({
    url,
    token: 'admin',
    timeoutMs: 60_000,
    onRequest: (_m, status) => {
      tally.requests++;
      if (status === 409) tally.conflicts++;
      if (status >= 500) tally.serverErrors++;
    },
  });
  const sync = new PlacementSync({
    source: conductor,
    client,
    log,
    resourceProviderName: '{host}',
    createRootProviders: true,
    intervalMs: 3_600_000,
    concurrency,
  });
  const views = conductor.listAccelerators();
  const pending = new Map<string, string[]>();
  for (const v of views) pending.set(v.host, [...(pending.get(v.host) ?? []), v.id]);
  const hostDoneMs: number[] = [];
  const t0 = performance.now();
  sync.start();
  while (pending.size > 0) {
    await new Promise((r) => setTimeout(r, 25));
    for (const [host, ids] of pending) {
      if (ids.every((id) => sync.status(id)?.status === 'in_sync')) {
        pending.delete(host);
        hostDoneMs.push(performance.now() - t0);
      }
    }
  }
  const totalMs = performance.now() - t0;
  sync.stop();
  return { totalMs, hostDoneMs, tally };
}
