import { Type, type Static } from '@sinclair/typebox';
import { assign, fromPromise, setup } from 'xstate';
import { ArqStates, type ArqState, type CyborgArqState } from './states.js';
import { CyborgError } from '../errors/index.js';

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

/** Where Nova binds an ARQ: the host, the deployable's resource provider and the instance. */
export const BindingSchema = Type.Object({
  hostname: Type.String(),
  deviceRpUuid: Type.String(),
  instanceUuid: Type.String(),
  projectId: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  /**
   * What the device profile's group asks to be programmed before the bind completes
   * (`accel:bitstream_id`, `accel:function_id`); set by the conductor, never by the caller.
   */
  program: Type.Optional(
    Type.Object({ bitstreamId: Type.Optional(Type.String({ maxLength: 255 })), functionId: Type.Optional(Type.String({ maxLength: 255 })) }),
  ),
  /**
   * The attach handle to take instead of the first free one: an operator's attach naming it, or
   * the conductor adopting a handle a running guest holds. Nova's bind never names one.
   */
  handleUuid: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});
export type Binding = Static<typeof BindingSchema>;

/** The attach handle a bound ARQ holds. */
export const BoundToSchema = Type.Object({
  acceleratorId: Type.String(),
  handleUuid: Type.String(),
});
export type BoundTo = Static<typeof BoundToSchema>;

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
  | { type: 'BIND'; hostname: string; deviceRpUuid: string; instanceUuid: string; projectId?: string | null; program?: Binding['program']; handleUuid?: string }
  | { type: 'UNBIND' }
  | { type: 'DELETE' }
  /** The conductor's reconciliation: try the release of a pending delete again. */
  | { type: 'RETRY' }
  /** Reconciliation of any acknowledged intent whose release has not finished (a pending delete, a failed unbind). */
  | { type: 'RECONCILE' }
  /** Crash recovery: the record was saved while an effect ran, and nobody knows how it ended. */
  | { type: 'INTERRUPTED' }
  /**
   * An operator released the instance from the card it was bound to (the card died under it, or
   * its host is lost): the handle is gone, so the ARQ is a failed bind, as Nova reads one.
   */
  | { type: 'RELEASED'; reason: string };

export { ARQ_STATES, ArqStates, CYBORG_ARQ_STATES, type ArqState, type CyborgArqState } from './states.js';

/**
 * `busy`: an effect runs. `resolved`: what Nova waits for before it boots (Cyborg's Bound,
 * BindFailed, Deleting). `in-flight`: the ARQ is taking or giving back a handle, so a handle held
 * for it is not an orphan.
 */
export type ArqTag = 'busy' | 'resolved' | 'in-flight';

export const ARQ_EVENTS = ['BIND', 'UNBIND', 'DELETE'] as const;

export const arqMachine = setup({
  types: {
    context: {} as ArqContext,
    events: {} as ArqEvent,
    input: {} as ArqInput,
    tags: {} as ArqTag,
  },
  actors: {
    bind: fromPromise<BoundTo, { uuid: string; binding: Binding }>(async () => {
      throw new CyborgError('internal.error', 'bind is provided by the conductor');
    }),
    unbind: fromPromise<void, { uuid: string; boundTo: BoundTo | null }>(async () => {
      throw new CyborgError('internal.error', 'unbind is provided by the conductor');
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
    // The bind's output comes as params: only the invoke's onDone has its done event typed.
    storeBoundTo: assign((_, boundTo: BoundTo) => ({ boundTo })),
    storeError: assign({ error: ({ event }) => errorText(event) }),
    clearBinding: assign({ binding: null, boundTo: null }),
    markInterrupted: assign({ error: 'interrupted' }),
    // The binding stays (Nova finds and deletes the ARQ by its instance); the handle is gone.
    markReleased: assign(({ event }) => (event.type === 'RELEASED' ? { boundTo: null, error: `released: ${event.reason}` } : {})),
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
      tags: ['busy', 'in-flight'],
      on: { INTERRUPTED: { target: 'BindFailed', actions: 'markInterrupted' } },
      invoke: {
        id: 'bind',
        src: 'bind',
        input: ({ context }) => ({ uuid: context.uuid, binding: context.binding! }),
        onDone: { target: 'Bound', actions: { type: 'storeBoundTo', params: ({ event }) => event.output } },
        onError: { target: 'BindFailed', actions: 'storeError' },
      },
    },
    Bound: {
      tags: ['resolved'],
      on: {
        UNBIND: { target: 'Unbinding' },
        DELETE: { target: 'Deleting' },
        RELEASED: { target: 'BindFailed', actions: 'markReleased' },
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
    // Still Bound to Cyborg's clients (see `cyborgState`): resolved as Nova reads it.
    Unbinding: {
      tags: ['busy', 'resolved', 'in-flight'],
      on: { INTERRUPTED: { target: 'UnbindFailed', actions: 'markInterrupted' } },
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
        RECONCILE: { target: 'Unbinding' },
        DELETE: { target: 'Deleting' },
      },
    },
    // A delete interrupted by a crash stays a delete: reconciliation finishes it.
    Deleting: {
      tags: ['busy', 'resolved', 'in-flight'],
      on: { INTERRUPTED: { target: 'DeletePending', actions: 'markInterrupted' } },
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
      tags: ['resolved', 'in-flight'],
      on: {
        RETRY: { target: 'Deleting' },
        RECONCILE: { target: 'Deleting' },
        // A repeated DELETE (Nova retrying) tries again now.
        DELETE: { target: 'Deleting' },
      },
    },
    Deleted: { type: 'final' },
  },
});

/** The state name Cyborg's API shows for one of ours. */
export function cyborgState(state: ArqState): CyborgArqState {
  if (state === ArqStates.Unbinding) return ArqStates.Bound;
  if (state === ArqStates.DeletePending) return ArqStates.Deleting;
  return state;
}

/** States in which the ARQ is on its way out (a delete was acknowledged). */
export function isDeleting(state: string): boolean {
  return state === ArqStates.Deleting || state === ArqStates.DeletePending || state === ArqStates.Deleted;
}

/** The tags of an ARQ in `state` (what views carry, so that readers never match state names). */
export function arqTags(state: string): ArqTag[] {
  return [...((arqMachine.states as Record<string, { tags: readonly string[] } | undefined>)[state]?.tags ?? [])] as ArqTag[];
}

function errorText(event: unknown): string {
  const err = (event as { error?: unknown }).error;
  return err instanceof Error ? err.message : String(err ?? 'failed');
}

export type ArqMachine = typeof arqMachine;
