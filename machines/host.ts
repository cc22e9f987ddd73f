import { assign, setup } from 'xstate';

export { HOST_STATES, HostStates, type HostState } from './states.js';

/**
 * An agent session's liveness, driven by heartbeats: `online` while they arrive, `stale` after
 * `staleAfter` without one, `lost` after `lostAfter` more. A heartbeat brings it back `online`.
 * Entering `lost` and leaving it are the named effects `hostLost` / `hostReturned`, provided by
 * the HostActor (it tells its accelerators to go offline / come back).
 *
 * While `online`, the hosting actor may keep routine heartbeats (same agent, same epoch) to itself
 * and only note their time: a fleet of 10,000 hosts beating at 1 Hz would otherwise cost 10,000
 * macrosteps (and timer resets) a second. It then provides `untilStale` (the time left before the
 * last beat it saw is `staleAfter` old) and `quiet` (no beat for `staleAfter`): when the timer
 * fires on a host that did beat meanwhile, `online` re-arms for the time left instead of going
 * stale. The defaults — a fixed delay, always quiet — are the plain machine that sees every beat.
 */

export interface HostContext {
  host: string;
  agentId: string | null;
  epoch: number;
  lastSeq: number;
}

export type HostEvent = { type: 'HEARTBEAT'; agentId: string; epoch: number; seq: number } | { type: 'REGISTER'; agentId: string; epoch: number };

/** A host's context before its agent registered: what its machine starts from. */
export function hostContextOf(host: string): HostContext {
  return { host, agentId: null, epoch: 0, lastSeq: 0 };
}

export const hostMachine = setup({
  types: {
    context: {} as HostContext,
    events: {} as HostEvent,
    input: {} as { host: string },
  },
  delays: {
    untilStale: 15_000,
    lostAfter: 45_000,
  },
  guards: {
    quiet: () => true,
  },
  actions: {
    record: assign(({ context, event }) => ({
      agentId: event.agentId,
      epoch: event.epoch,
      lastSeq: event.type === 'HEARTBEAT' ? event.seq : context.lastSeq,
    })),
    hostLost: () => {},
    hostReturned: () => {},
  },
}).createMachine({
  id: 'host',
  context: ({ input }) => hostContextOf(input.host),
  initial: 'online',
  states: {
    online: {
      after: {
        untilStale: [
          { guard: 'quiet', target: 'stale' },
          { target: 'online', reenter: true },
        ],
      },
      on: {
        HEARTBEAT: { target: 'online', reenter: true, actions: 'record' },
        REGISTER: { target: 'online', reenter: true, actions: 'record' },
      },
    },
    stale: {
      after: { lostAfter: 'lost' },
      on: {
        HEARTBEAT: { target: 'online', actions: 'record' },
        REGISTER: { target: 'online', actions: 'record' },
      },
    },
    lost: {
      entry: 'hostLost',
      on: {
        HEARTBEAT: { target: 'online', actions: ['record', 'hostReturned'] },
        REGISTER: { target: 'online', actions: ['record', 'hostReturned'] },
      },
    },
  },
});

export type HostMachine = typeof hostMachine;
