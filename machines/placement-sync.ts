import { assign, fromPromise, setup } from 'xstate';
import { CyborgError } from '../errors/index.js';

/**
 * The Placement sync loop: waits for work, runs one reconcile pass at a time, and backs off
 * while Placement is down or a pass asks to be retried. Work is either a full pass (every host,
 * out-of-band changes and stale providers included) or the accelerators that changed; changes
 * that arrive during a pass are queued and merged into the next one, so a burst of transitions
 * costs one pass, not one per transition. A clock region asks for a full pass every `interval`.
 *
 * Pure: the pass itself is the invoked actor `pass`, provided by the PlacementSync actor.
 */

export interface SyncWork {
  full: boolean;
  ids: string[];
}

export interface PassResult {
  /** Something is worth retrying soon (Placement down, root provider missing, …). */
  retry: boolean;
  /** Why, for the log and the status. */
  reason?: string;
  /**
   * Providers came into sync during the pass: a retry it asks for is the rest of a converge under
   * way, not the same failure again, and is not backed off further. Finite work per provider
   * bounds these passes; a pass that moves nothing backs off as before.
   */
  progressed?: boolean;
}

export interface PlacementSyncContext {
  queued: SyncWork;
  inFlight: SyncWork | null;
  /** Passes in a row that failed or asked for a retry without progress: drives the backoff. */
  failures: number;
  lastError: string | null;
  passes: number;
}

export type PlacementSyncEvent = { type: 'CHANGED'; ids: string[] } | { type: 'RECONCILE' };

const NOTHING: SyncWork = { full: false, ids: [] };

function merge(a: SyncWork, b: SyncWork): SyncWork {
  return { full: a.full || b.full, ids: b.ids.length === 0 ? a.ids : [...new Set([...a.ids, ...b.ids])] };
}

export const placementSyncMachine = setup({
  types: {
    context: {} as PlacementSyncContext,
    events: {} as PlacementSyncEvent,
  },
  actors: {
    pass: fromPromise<PassResult, SyncWork>(async () => {
      throw new CyborgError('internal.error', 'pass is provided by the PlacementSync actor');
    }),
  },
  delays: {
    interval: 60_000,
    backoff: ({ context }) => Math.min(30_000, 500 * 2 ** Math.max(0, context.failures - 1)),
  },
  guards: {
    hasWork: ({ context }) => context.queued.full || context.queued.ids.length > 0,
    // A pass's result comes as params: only the invoke's onDone has its done event typed.
    asksRetry: (_, result: PassResult | undefined) => result?.retry === true,
  },
  actions: {
    queueChanged: assign(({ context, event }) => ({
      queued: event.type === 'CHANGED' ? merge(context.queued, { full: false, ids: event.ids }) : context.queued,
    })),
    queueFull: assign(({ context }) => ({ queued: merge(context.queued, { full: true, ids: [] }) })),
    take: assign(({ context }) => ({ inFlight: context.queued, queued: NOTHING })),
    succeeded: assign(({ context }) => ({ inFlight: null, failures: 0, lastError: null, passes: context.passes + 1 })),
    // A pass that failed or asks for a retry is redone in full after the backoff.
    failed: assign(({ context }, e: { error?: unknown; output?: PassResult }) => {
      const why = e.output?.reason ?? (e.error instanceof Error ? e.error.message : e.error === undefined ? 'retry' : String(e.error));
      return {
        inFlight: null,
        queued: merge(context.queued, { full: true, ids: context.inFlight?.ids ?? [] }),
        failures: e.output?.progressed ? 1 : context.failures + 1,
        lastError: why,
        passes: context.passes + 1,
      };
    }),
  },
}).createMachine({
  id: 'placementSync',
  type: 'parallel',
  context: { queued: { full: true, ids: [] }, inFlight: null, failures: 0, lastError: null, passes: 0 },
  on: {
    CHANGED: { actions: 'queueChanged' },
    RECONCILE: { actions: 'queueFull' },
  },
  states: {
    clock: {
      initial: 'ticking',
      states: {
        ticking: { after: { interval: { target: 'ticking', reenter: true, actions: 'queueFull' } } },
      },
    },
    loop: {
      initial: 'idle',
      states: {
        idle: {
          always: { guard: 'hasWork', target: 'syncing' },
        },
        syncing: {
          entry: 'take',
          invoke: {
            src: 'pass',
            input: ({ context }) => context.inFlight ?? NOTHING,
            onDone: [
              {
                guard: { type: 'asksRetry', params: ({ event }) => event.output },
                target: 'backoff',
                actions: { type: 'failed', params: ({ event }) => ({ output: event.output }) },
              },
              { target: 'idle', actions: 'succeeded' },
            ],
            onError: { target: 'backoff', actions: { type: 'failed', params: ({ event }) => ({ error: event.error }) } },
          },
        },
        backoff: {
          after: { backoff: 'syncing' },
        },
      },
    },
  },
});

export type PlacementSyncMachine = typeof placementSyncMachine;
