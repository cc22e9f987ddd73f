import { assign, fromPromise, setup } from 'xstate';

/**
 * An accelerator request (ARQ), with Cyborg's states: Initial → BindStarted → Bound | BindFailed,
 * then Unbound / UnbindFailed, and Deleting on the way out. `Unbinding` is ours: the driver is
 * releasing the handle; Cyborg clients see it as `Bound` until that has finished (see `cyborgState`).
 *
 * Effects are three invoked actors provided by the conductor: `bind` (pick and attach a handle),
 * `unbind` (detach it) and `release` (unbind if needed before deletion).
 */

export interface Binding {
  hostname: string;
  deviceRpUuid: string;
  instanceUuid: string;
  projectId?: string | null;
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
  | { type: 'BIND'; hostname: string; deviceRpUuid: string; instanceUuid: string; projectId?: string | null }
  | { type: 'UNBIND' }
  | { type: 'DELETE' };

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
        onError: { target: 'UnbindFailed', actions: 'storeError' },
      },
    },
    Deleted: { type: 'final' },
  },
});

/** The state name Cyborg's API shows for one of ours. */
export function cyborgState(state: string): string {
  return state === 'Unbinding' ? 'Bound' : state;
}

function errorText(event: unknown): string {
  const err = (event as { error?: unknown }).error;
  return err instanceof Error ? err.message : String(err ?? 'failed');
}

export type ArqMachine = typeof arqMachine;
