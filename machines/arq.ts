import { assign, fromPromise, setup } from 'xstate';

/**
 * An accelerator request (ARQ), with Cyborg's states: Initial → BindStarted → Bound | BindFailed,
 * then Unbound / UnbindFailed, and Deleting on the way out. `Unbinding` is ours: the driver is
 * releasing the handle; Cyborg clients see it as `Bound` until that has finished (see `cyborgState`).
 *
 * A delete is a promise kept: once `Deleting` is entered (and committed) the ARQ only ever moves
 * on to `Deleted`. A release that cannot finish now (agent away, the accelerator's conductor
 * failing over) parks the ARQ in `DeletePending` — still `Deleting` to Cyborg clients — until the
 * conductor's reconciliation sends `RETRY`. An unbind that failed (`UnbindFailed`) is retried the
 * same way with `UNBIND`.
 *
 * Effects are three invoked actors provided by the conductor: `bind` (pick and attach a handle),
 * `unbind` (detach it) and `release` (unbind if needed before deletion).
 */

export interface Binding {
  hostname: string;
  deviceRpUuid: string;
  instanceUuid: string;
  projectId?: string | null;
  /** What the device profile asks to program before the bind completes (set by the conductor). */
  program?: { bitstreamId?: string; functionId?: string };
}

export interface BoundTo {
  acceleratorId: string;
  handleUuid: string;
}

export interface ArqContext {
  uuid: string;
  deviceProfileName: string;
  deviceProfileGroupId: number;
  projectId: string | null;
  binding: Binding | null;
  boundTo: BoundTo | null;
  error: string | null;
}

export type ArqInput = Pick<ArqContext, 'uuid' | 'deviceProfileName' | 'deviceProfileGroupId' | 'projectId'>;

export type ArqEvent =
  | { type: 'BIND'; hostname: string; deviceRpUuid: string; instanceUuid: string; projectId?: string | null; program?: Binding['program'] }
  | { type: 'UNBIND' }
  | { type: 'DELETE' }
  /** The conductor's reconciliation: try the release of a pending delete again. */
  | { type: 'RETRY' };

export const ARQ_EVENTS = ['BIND', 'UNBIND', 'DELETE'] as const;

export const arqMachine = setup({
  types: {
    context: {} as ArqContext,
    events: {} as ArqEvent,
    input: {} as ArqInput,
    tags: {} as 'busy' | 'resolved',
  },
  actors: {
    bind: fromPromise<BoundTo, { uuid: string; binding: Binding }>(async () => {
      throw new Error('bind is provided by the conductor');
    }),
    unbind: fromPromise<void, { uuid: string; boundTo: BoundTo | null }>(async () => {
      throw new Error('unbind is provided by the conductor');
    }),
  },
  actions: {
    storeBinding: assign(({ context, event }) => {
      if (event.type !== 'BIND') return {};
      const { type: _t, ...binding } = event;
      return {
        binding,
        projectId: event.projectId ?? context.projectId,
        error: null,
      };
    }),
    storeBoundTo: assign({ boundTo: ({ event }) => (event as unknown as { output: BoundTo }).output }),
    storeError: assign({ error: ({ event }) => errorText(event) }),
    clearBinding: assign({ binding: null, boundTo: null }),
  },
}).createMachine({
  id: 'arq',
  context: ({ input }) => ({ ...input, binding: null, boundTo: null, error: null }),
  initial: 'Initial',
  states: {
    Initial: {
      on: {
        BIND: { target: 'BindStarted', actions: 'storeBinding' },
        DELETE: { target: 'Deleting' },
      },
    },
    BindStarted: {
      tags: ['busy'],
      invoke: {
        id: 'bind',
        src: 'bind',
        input: ({ context }) => ({ uuid: context.uuid, binding: context.binding! }),
        onDone: { target: 'Bound', actions: 'storeBoundTo' },
        onError: { target: 'BindFailed', actions: 'storeError' },
      },
    },
    Bound: {
      tags: ['resolved'],
      on: {
        UNBIND: { target: 'Unbinding' },
        DELETE: { target: 'Deleting' },
      },
    },
    BindFailed: {
      tags: ['resolved'],
      on: {
        // Through Unbinding, not straight to Unbound: a bind a crash interrupted may have left the
        // accelerator holding a handle for this ARQ (the unbind effect finds and releases it).
        UNBIND: { target: 'Unbinding' },
        DELETE: { target: 'Deleting' },
      },
    },
    Unbinding: {
      tags: ['busy'],
      invoke: {
        id: 'unbind',
        src: 'unbind',
        input: ({ context }) => ({ uuid: context.uuid, boundTo: context.boundTo }),
        onDone: { target: 'Unbound', actions: 'clearBinding' },
        onError: { target: 'UnbindFailed', actions: 'storeError' },
      },
    },
    Unbound: {
      on: {
        BIND: { target: 'BindStarted', actions: 'storeBinding' },
        DELETE: { target: 'Deleting' },
      },
    },
    UnbindFailed: {
      on: {
        UNBIND: { target: 'Unbinding' },
        DELETE: { target: 'Deleting' },
      },
    },
    Deleting: {
      tags: ['busy', 'resolved'],
      invoke: {
        id: 'unbind',
        src: 'unbind',
        input: ({ context }) => ({ uuid: context.uuid, boundTo: context.boundTo }),
        onDone: { target: 'Deleted', actions: 'clearBinding' },
        // Never back to a state a bind could leave from: the delete was acknowledged.
        onError: { target: 'DeletePending', actions: 'storeError' },
      },
    },
    DeletePending: {
      tags: ['resolved'],
      on: {
        RETRY: { target: 'Deleting' },
        // A repeated DELETE (Nova retrying) tries again now.
        DELETE: { target: 'Deleting' },
      },
    },
    Deleted: { type: 'final' },
  },
});

/** The state name Cyborg's API shows for one of ours. */
export function cyborgState(state: string): string {
  return CYBORG_NAMES[state] ?? state;
}

const CYBORG_NAMES: Record<string, string> = { Unbinding: 'Bound', DeletePending: 'Deleting' };

/** States in which the ARQ is on its way out (a delete was acknowledged). */
export function isDeleting(state: string): boolean {
  return state === 'Deleting' || state === 'DeletePending' || state === 'Deleted';
}

function errorText(event: unknown): string {
  const err = (event as { error?: unknown }).error;
  return err instanceof Error ? err.message : String(err ?? 'failed');
}

export type ArqMachine = typeof arqMachine;
