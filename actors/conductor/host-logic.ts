import { hostMachine } from '../../machines/index.js';
import type { Timing } from './timing.js';

export type HostLogic = ReturnType<typeof hostMachine.provide>;

/**
 * The host machine with its delays and effects provided; `onLost`/`onReturned` route by host name,
 * `lastBeatOf` gives the time of a host's last heartbeat (its actor keeps routine beats to itself:
 * see machines/host.ts).
 */
export function hostLogic(
  timing: Timing,
  onLost: (host: string) => void,
  onReturned: (host: string) => void,
  lastBeatOf: (host: string) => number | undefined,
): HostLogic {
  // A host not yet in the conductor's map is being built right now: silent for 0 ms.
  const silentFor = (host: string): number => Date.now() - (lastBeatOf(host) ?? Date.now());
  return hostMachine.provide({
    delays: {
      untilStale: ({ context }) => Math.max(1, timing.staleAfterMs - silentFor(context.host)),
      lostAfter: Math.max(1, timing.lostAfterMs - timing.staleAfterMs),
    },
    guards: { quiet: ({ context }) => silentFor(context.host) >= timing.staleAfterMs },
    actions: {
      hostLost: ({ context }) => queueMicrotask(() => onLost(context.host)),
      hostReturned: ({ context }) => queueMicrotask(() => onReturned(context.host)),
    },
  });
}
