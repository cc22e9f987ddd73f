import { hostMachine } from '../../machines/index.js';
import type { TreeEffects } from './tree-effects.js';
import type { Timing } from './timing.js';

export type HostLogic = ReturnType<typeof hostMachine.provide>;

/**
 * The host machine with its delays and effects provided; the tree's `hostLost`/`hostReturned`
 * route by host name, `lastSignOf` gives the time of a host's last heartbeat (its actor keeps
 * routine beats to itself: see machines/host.ts).
 */
export function hostLogic(timing: Timing, tree: Pick<TreeEffects, 'hostLost' | 'hostReturned' | 'lastSignOf'>): HostLogic {
  // A host not yet in the conductor's map is being built right now: silent for 0 ms.
  const silentFor = (host: string): number => Date.now() - (tree.lastSignOf(host) ?? Date.now());
  return hostMachine.provide({
    delays: {
      untilStale: ({ context }) => Math.max(1, timing.staleAfterMs - silentFor(context.host)),
      lostAfter: Math.max(1, timing.lostAfterMs - timing.staleAfterMs),
    },
    guards: { quiet: ({ context }) => silentFor(context.host) >= timing.staleAfterMs },
    actions: {
      hostLost: ({ context }) => queueMicrotask(() => tree.hostLost(context.host)),
      hostReturned: ({ context }) => queueMicrotask(() => tree.hostReturned(context.host)),
    },
  });
}
