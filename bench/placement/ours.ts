import type { Logger } from 'pino';
import type { Conductor } from '../../actors/conductor/index.js';
import { PlacementSync } from '../../actors/services/index.js';
import { PlacementClient } from '../../openstack/placement/index.js';
import type { Tally } from './ceiling.js';

/** What our client saw: the ceiling's counts, and the calls that got no answer (timed out, connection dropped). */
export interface OursTally extends Tally {
  noAnswer: number;
}

/** When each host's providers were all in sync, in ms from the start, in the order hosts came. */
export interface Converged {
  totalMs: number;
  hostDoneMs: number[];
  tally: OursTally;
  /** Hosts still not in sync when `deadlineMs` ran out (0 without a deadline). */
  pendingHosts: number;
}

export interface OursOptions {
  /** The sync's full-pass period; by default an hour, so only the cold start's own pass runs. */
  intervalMs?: number;
  /**
   * Our client's per-request timeout; by default 60 s, above the fault bench's 10 s holds (the
   * product's default, `[placement] timeout`, is 10 s).
   */
  timeoutMs?: number;
  /** Told as each host comes in sync, with how many are. */
  onHostDone?: (host: string, done: number) => void;
  /** Gives up waiting for hosts to come in sync after this long (a fault variant must not hang the bench). */
  deadlineMs?: number;
  /** Awaited once every host is in sync, before the sync stops: for a variant that needs a later pass. */
  settle?: () => Promise<void>;
}

/**
 * Our sync converging the conductor's accelerators into an empty Placement from a cold start (its
 * first, full pass), with `concurrency` requests in flight. A host counts as done when every one
 * of its accelerators says `in_sync`: what Nova sees is then in Placement.
 */
export async function ours(url: string, conductor: Conductor, concurrency: number, log: Logger, o: OursOptions = {}): Promise<Converged> {
  const tally: OursTally = { requests: 0, conflicts: 0, serverErrors: 0, noAnswer: 0 };
  const client = new PlacementClient({
    url,
    token: 'admin',
    timeoutMs: o.timeoutMs ?? 60_000,
    onRequest: (_m, status) => {
      tally.requests++;
      if (status === 409) tally.conflicts++;
      if (status >= 500) tally.serverErrors++;
      if (status === 0) tally.noAnswer++;
    },
  });
  const sync = new PlacementSync({
    source: conductor,
    client,
    log,
    resourceProviderName: '{host}',
    createRootProviders: true,
    intervalMs: o.intervalMs ?? 3_600_000,
    concurrency,
  });
  const views = conductor.listAccelerators();
  const pending = new Map<string, string[]>();
  for (const v of views) pending.set(v.host, [...(pending.get(v.host) ?? []), v.id]);
  const hostDoneMs: number[] = [];
  const t0 = performance.now();
  sync.start();
  while (pending.size > 0 && performance.now() - t0 < (o.deadlineMs ?? Infinity)) {
    await new Promise((r) => setTimeout(r, 25));
    for (const [host, ids] of pending) {
      if (ids.every((id) => sync.status(id)?.status === 'in_sync')) {
        pending.delete(host);
        hostDoneMs.push(performance.now() - t0);
        o.onHostDone?.(host, hostDoneMs.length);
      }
    }
  }
  const totalMs = performance.now() - t0;
  try {
    if (pending.size === 0) await o.settle?.();
  } finally {
    sync.stop();
  }
  return { totalMs, hostDoneMs, tally, pendingHosts: pending.size };
}
