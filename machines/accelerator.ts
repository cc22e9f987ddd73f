import { Type, type Static } from '@sinclair/typebox';
import { and, assign, setup } from 'xstate';
import {
  DEFAULT_HEALTH_POLICY,
  HEALTHY,
  nextHealth,
  nextMark,
  type HealthPolicy,
  type HealthSignal,
  type HealthState,
  type MaintenanceMark,
  type MaintenanceScope,
} from './health.js';

/**
 * The lifecycle of one accelerator (a Cyborg deployable: one schedulable unit, one Placement
 * resource provider, one or more attach handles).
 *
 *   inactive → ready → programmed → attached, through the transient states a driver works in.
 *
 * Pure: no I/O. The one effect, running a driver operation, is the entry action `runDriverOp`,
 * provided by the hosting actor with `machine.provide()`: it starts the operation and answers
 * OP_DONE or OP_FAILED tagged with the operation's `opSeq`. An operation that has not answered
 * after the delay `opTimeout` (the conductor's driver-operation timeout) fails as "timed out".
 *
 * Why an entry action answering with a sequence number rather than an invoked promise: the
 * number is also the agent command's idempotency key (persisted with the record, so a conductor
 * taking over re-sends under the same key), and it already tells a late outcome — after a lost
 * host or a newer operation — from the current one, which is all an invoke's cancellation would
 * add.
 *
 * Health and maintenance are context beside the lifecycle (machines/health.ts says why): signals
 * (`HEALTH`) move `health` through ok / degraded / quarantined with hysteresis, operator marks
 * (`MAINTAIN`, `END_MAINTENANCE`) set `maintenance`; either takes the device out of service — no
 * new ATTACH, Placement reserved (`conditionTags`) — and neither touches an attached instance.
 */

/** Driver operations; `mig_layout` and `vf_count` re-lay out a whole card (run by the conductor, not the machine). */
export type DriverOp = 'install' | 'uninstall' | 'program' | 'attach' | 'detach' | 'reset' | 'mig_layout' | 'vf_count' | 'restore';

/** An instance's hold on one attach handle of an accelerator. */
export const AllocationSchema = Type.Object({
  handleUuid: Type.String(),
  instanceUuid: Type.String(),
  arqUuid: Type.Optional(Type.String()),
  projectId: Type.Optional(Type.String()),
});
export type Allocation = Static<typeof AllocationSchema>;

/** What an accelerator was last programmed with. */
export const ProgramInfoSchema = Type.Object({
  bitstreamId: Type.Optional(Type.String()),
  functionId: Type.Optional(Type.String()),
});
export type ProgramInfo = Static<typeof ProgramInfoSchema>;

export type StableState = 'inactive' | 'ready' | 'programmed' | 'attached' | 'error' | 'removed';

export interface AcceleratorContext {
  id: string;
  host: string;
  /** How many attach handles this accelerator has: how many instances may hold it at once. */
  capacity: number;
  allocations: Allocation[];
  program: ProgramInfo | null;
  /** The driver operation under way (in a transient state) or last tried (in `error`). */
  pending: { op: DriverOp; params: Record<string, unknown> } | null;
  error: { op: DriverOp; reason: string } | null;
  /** Where the accelerator goes back to when its host returns. */
  resume: StableState | null;
  /**
   * Driver operations started so far. With the op it makes the agent command's idempotency key,
   * persisted with the record, so a conductor taking over re-sends an operation under the same key.
   */
  opSeq?: number;
  /** Absent: healthy (most of a fleet; nothing stored for it). */
  health?: HealthState;
  /** Absent or null: in service. */
  maintenance?: MaintenanceMark | null;
  /**
   * What the card in this slot says about itself (model's HardwareIdentity: a GPU UUID, a MAC, a
   * PCIe serial), as first recorded; absent while its hardware has given none.
   */
  identity?: CardIdentity;
}

/** A card's own serial and where it was read (`nvidia-smi uuid`, `mac`, `pcie dsn`). */
export type CardIdentity = {
  serial: string;
  source: string;
};

export type AcceleratorInput = Pick<AcceleratorContext, 'id' | 'host' | 'capacity' | 'identity'>;

export type AcceleratorEvent =
  | { type: 'ENABLE' }
  | { type: 'DISABLE' }
  | { type: 'PROGRAM'; bitstreamId?: string; functionId?: string }
  | { type: 'ATTACH'; handleUuid: string; instanceUuid: string; arqUuid?: string; projectId?: string }
  | { type: 'DETACH'; handleUuid: string }
  /** Operator: let an instance go from a card whose detach failed, without the driver (the card stays in error). */
  | { type: 'RELEASE'; instanceUuid: string }
  | { type: 'RETRY' }
  | { type: 'REMOVE' }
  /** `identity`: the audit's note that the card gives no serial (it may be another card). */
  | { type: 'REDISCOVERED'; identity?: string }
  /** The slot's card said who it is for the first time (nothing recorded yet): recorded. */
  | ({ type: 'IDENTIFIED' } & CardIdentity)
  /**
   * Another card is in the slot (its serial is not the recorded one): the old card's record is
   * retired and the new one starts as a fresh discovery — `inactive`, no health history, no
   * quarantine, no program — keeping only the operator's maintenance marks, which are the slot's
   * and the host's. Only while no instance holds it: an attached card is nobody's to retire.
   */
  | ({ type: 'REPLACED'; previous: string } & CardIdentity)
  | { type: 'HOST_LOST' }
  | { type: 'HOST_BACK' }
  /** A health check's outcome from the agent (system event). */
  | ({ type: 'HEALTH' } & HealthSignal)
  /** Operator: forget a fault (a fatal one included) and return to service. */
  | { type: 'CLEAR_HEALTH' }
  /** Operator: run the driver's reset (where it has one) on an idle device, then clear its health. */
  | { type: 'RESET' }
  /** Operator: mark (or unmark) the device for maintenance, for itself or as part of its host's drain. */
  | { type: 'MAINTAIN'; scope: MaintenanceScope; at?: number }
  | { type: 'END_MAINTENANCE'; scope: MaintenanceScope; at?: number }
  /** A driver operation's outcome, sent back by the `runDriverOp` effect (see `opSeq`). */
  | { type: 'OP_DONE'; seq: number; output?: Record<string, unknown> }
  /** `unchanged`: the device is as it was before (a programming refused or rolled back). */
  | { type: 'OP_FAILED'; seq: number; reason: string; unchanged?: boolean }
  /** Crash recovery: the record was saved in a transient state; nobody knows how its operation ended. */
  | { type: 'INTERRUPTED' };

export { ACCELERATOR_STATES, AcceleratorStates, type AcceleratorState } from './states.js';

/**
 * The questions asked of an accelerator's state outside this file, answered here:
 * - `busy`: a driver operation runs; requests wait for it, passivation leaves it awake.
 * - `transient`: a state nobody rests in; a record saved in one was interrupted (restart).
 * - `usable`: enabled, so Placement may allocate its inventory (otherwise reserved).
 * - `allocatable`: an instance may attach now; `in-use`: an instance holds (or is taking) it.
 */
export type AcceleratorTag = 'busy' | 'transient' | 'usable' | 'allocatable' | 'in-use';

/**
 * Tags of the context rather than the state (XState's tags belong to state nodes), read the same
 * way by views, Placement and the UI:
 * - `degraded`: recent bad checks, still in service; `quarantined`: out of service for health.
 * - `draining`: marked for maintenance while instances still hold it; `maintenance`: marked, idle.
 * - `reserved`: out of service — Placement reserves its inventory and nothing new attaches.
 */
export type ConditionTag = 'degraded' | 'quarantined' | 'draining' | 'maintenance' | 'reserved';

export function conditionTags(ctx: AcceleratorContext): ConditionTag[] {
  const tags: ConditionTag[] = [];
  const status = ctx.health?.status ?? 'ok';
  if (status !== 'ok') tags.push(status);
  if (ctx.maintenance) tags.push(ctx.allocations.length > 0 ? 'draining' : 'maintenance');
  if (status === 'quarantined' || ctx.maintenance) tags.push('reserved');
  return tags;
}

/** In service: neither quarantined nor marked for maintenance. */
export function inService(ctx: AcceleratorContext): boolean {
  return !ctx.maintenance && (ctx.health?.status ?? 'ok') !== 'quarantined';
}

/** The events an operator (REST, CLI, UI) may send; the rest come from the system itself. */
export const OPERATOR_EVENTS = [
  'ENABLE',
  'DISABLE',
  'PROGRAM',
  'ATTACH',
  'DETACH',
  'RETRY',
  'REMOVE',
  'RESET',
  'CLEAR_HEALTH',
  'MAINTAIN',
  'END_MAINTENANCE',
  'RELEASE',
] as const;
export type OperatorEvent = (typeof OPERATOR_EVENTS)[number];

export interface DriverOpInput {
  op: DriverOp;
  params: Record<string, unknown>;
  id: string;
  host: string;
  /** The context's `opSeq` when the operation started (see commandKey in actors/conductor/command-key.ts). */
  seq?: number;
}

/**
 * Where a new accelerator starts, and with what context. Exported so that a conductor registering
 * a fleet's accelerators can write their first records without running the machine for each
 * (actors/conductor/initial-record.test.ts holds it to what XState's initial transition gives).
 */
export const ACCELERATOR_INITIAL = 'inactive';

export function initialContext(input: AcceleratorInput): AcceleratorContext {
  const ctx: AcceleratorContext = {
    id: input.id,
    host: input.host,
    capacity: input.capacity,
    allocations: [],
    program: null,
    pending: null,
    error: null,
    resume: null,
  };
  if (input.identity) ctx.identity = input.identity;
  return ctx;
}

/** Which stable state an accelerator is in "underneath" a transient one. */
export function originOf(state: string, ctx: AcceleratorContext): StableState {
  switch (state) {
    case 'installing':
      return 'inactive';
    case 'attaching':
    case 'uninstalling':
    case 'programming':
      if (state === 'attaching' && ctx.allocations.length > 0) return 'attached';
      return ctx.program ? 'programmed' : 'ready';
    case 'detaching':
      return 'attached';
    case 'resetting':
      return ctx.program ? 'programmed' : 'ready';
    case 'offline':
      return ctx.resume ?? 'inactive';
    default:
      return state as StableState;
  }
}

/** Every state but `offline` and `removed` goes offline when its host is lost, remembering where it was. */
function lost(from: string) {
  return { target: '#accelerator.offline', actions: { type: 'rememberResume' as const, params: { from } } };
}

/**
 * A transient state in which a driver operation runs: `runDriverOp` on entry, its outcome (of
 * this operation only: `isCurrentOp`), its deadline (`opTimeout`), and going offline if the host
 * is lost meanwhile.
 */
function operation<const T extends readonly string[], const D extends { target: string; actions: unknown }>(
  name: string,
  tags: T,
  onDone: D,
  failTarget: string,
) {
  return {
    tags,
    entry: 'runDriverOp' as const,
    on: {
      OP_DONE: { guard: 'isCurrentOp' as const, ...onDone },
      OP_FAILED: { guard: 'isCurrentOp' as const, target: failTarget, actions: 'recordFailure' as const },
      HOST_LOST: lost(name),
      INTERRUPTED: INTERRUPTED_OP,
    },
    after: {
      opTimeout: { target: failTarget, actions: 'recordTimeout' as const },
    },
  };
}

/**
 * An operation a crash interrupted ends in `error` ("interrupted", RETRY allowed): nobody knows
 * whether the driver finished it, so it is never left hanging in `installing`.
 */
const INTERRUPTED_OP = { target: 'error', actions: 'recordInterruption' } as const;

/** Another card in the slot, nobody holding it: it starts as a fresh discovery. */
const REPLACED = { target: '#accelerator.inactive', actions: 'freshCard' } as const;

const PROGRAMMING = operation('programming', ['busy', 'transient', 'usable'], { target: 'programmed', actions: ['applyProgram', 'finishOp'] }, 'error');

const afterAttachOrDetach = [{ guard: 'hasAllocations', target: 'attached' }, { guard: 'isProgrammed', target: 'programmed' }, { target: 'ready' }] as const;

/** An interrupted attach handed nothing to an instance yet: back to where it was. */
const INTERRUPTED_ATTACH = afterAttachOrDetach.map((t) => ({ ...t, actions: ['recordInterruption', 'finishOp'] as const }));

const ATTACHING = operation(
  'attaching',
  ['busy', 'in-use', 'transient', 'usable'],
  { target: 'attached', actions: ['addAllocation', 'finishOp'] },
  'settleAfterFailedAttach',
);

export const acceleratorMachine = setup({
  types: {
    context: {} as AcceleratorContext,
    events: {} as AcceleratorEvent,
    input: {} as AcceleratorInput,
    tags: {} as AcceleratorTag,
  },
  delays: {
    /** The conductor's driver-operation timeout (provided by the hosting actor). */
    opTimeout: 30_000,
  },
  // The hysteresis the conductor configures reaches `applyHealth` through `healthActions(policy)`.
  guards: {
    isCurrentOp: ({ context, event }) => (event.type === 'OP_DONE' || event.type === 'OP_FAILED') && event.seq === (context.opSeq ?? 0),
    // A free handle on a device in service: a quarantined or maintenance-marked one takes no one new.
    hasFreeHandle: ({ context, event }) =>
      event.type === 'ATTACH' &&
      inService(context) &&
      context.allocations.length < context.capacity &&
      !context.allocations.some((a) => a.handleUuid === event.handleUuid),
    holdsInstance: ({ context, event }) => event.type === 'RELEASE' && context.allocations.some((a) => a.instanceUuid === event.instanceUuid),
    holdsHandle: ({ context, event }) => event.type === 'DETACH' && context.allocations.some((a) => a.handleUuid === event.handleUuid),
    hasAllocations: ({ context }) => context.allocations.length > 0,
    hasNoAllocations: ({ context }) => context.allocations.length === 0,
    isProgrammed: ({ context }) => context.program !== null,
    leftUnchanged: ({ event }) => event.type === 'OP_FAILED' && event.unchanged === true,
    failedOpIs: ({ context }, params: { op: DriverOp }) => context.error?.op === params.op,
    resumeIs: ({ context }, params: { state: StableState }) => context.resume === params.state,
    isUnhealthy: ({ context }) => (context.health?.status ?? 'ok') !== 'ok',
    isMarkedBy: ({ context, event }) => event.type === 'END_MAINTENANCE' && context.maintenance?.[event.scope] === true,
  },
  actions: {
    /** The effect: provided by the hosting actor (acceleratorLogic), which always answers OP_DONE / OP_FAILED. */
    runDriverOp: () => {},
    startOp: assign(({ context, event }) => {
      const opSeq = (context.opSeq ?? 0) + 1;
      switch (event.type) {
        case 'ENABLE':
          return { pending: { op: 'install' as const, params: {} }, error: null, opSeq };
        case 'DISABLE':
          return { pending: { op: 'uninstall' as const, params: {} }, error: null, opSeq };
        case 'PROGRAM':
          return { pending: { op: 'program' as const, params: stripType(event) }, error: null, opSeq };
        case 'ATTACH':
          return { pending: { op: 'attach' as const, params: stripType(event) }, error: null, opSeq };
        case 'DETACH':
          return { pending: { op: 'detach' as const, params: stripType(event) }, error: null, opSeq };
        case 'RESET':
          return { pending: { op: 'reset' as const, params: {} }, error: null, opSeq };
        default:
          return {};
      }
    }),
    recordFailure: assign(({ context, event }) => ({
      error: { op: context.pending?.op ?? 'install', reason: event.type === 'OP_FAILED' ? event.reason : 'driver operation failed' },
    })),
    recordInterruption: assign(({ context }) => ({ error: { op: context.pending?.op ?? ('install' as const), reason: 'interrupted' } })),
    recordTimeout: assign(({ context }) => {
      const op = context.pending?.op ?? 'install';
      return { error: { op, reason: `driver operation ${op} timed out` } };
    }),
    finishOp: assign({ pending: null }),
    // What was asked, completed by what the driver says it programmed: a function id resolves to
    // the image that provides it (the agent finds it in Glance).
    applyProgram: assign(({ context, event }) => {
      const out = event.type === 'OP_DONE' ? event.output : undefined;
      const said = (k: 'bitstreamId' | 'functionId'): ProgramInfo => (typeof out?.[k] === 'string' ? { [k]: out[k] as string } : {});
      return { program: { ...(context.pending?.params as ProgramInfo), ...said('bitstreamId'), ...said('functionId') } };
    }),
    clearProgram: assign({ program: null }),
    addAllocation: assign(({ context }) => {
      // The context keeps every operation's params untyped; an attach's are its ATTACH event's fields (startOp).
      const p = context.pending?.params as unknown as Allocation;
      const a: Allocation = { handleUuid: p.handleUuid, instanceUuid: p.instanceUuid };
      if (p.arqUuid !== undefined) a.arqUuid = p.arqUuid;
      if (p.projectId !== undefined) a.projectId = p.projectId;
      return { allocations: [...context.allocations, a] };
    }),
    // The card could not be detached (dead, or its driver refuses): the operator lets the instance
    // go in Cyborg's records only. The card keeps its error, so nothing binds it until it is retried or removed.
    releaseInstance: assign(({ context, event }) => {
      if (event.type !== 'RELEASE') return {};
      const allocations = context.allocations.filter((a) => a.instanceUuid !== event.instanceUuid);
      // Offline: a host that comes back finds its card held by nobody, not `attached` to no one.
      const resume =
        context.resume === 'attached' && allocations.length === 0 ? (context.program ? ('programmed' as const) : ('ready' as const)) : context.resume;
      return { allocations, resume };
    }),
    removeAllocation: assign(({ context }) => {
      const handle = (context.pending?.params as { handleUuid?: string }).handleUuid;
      return { allocations: context.allocations.filter((a) => a.handleUuid !== handle) };
    }),
    restartFailedOp: assign(({ context }) => ({
      pending: context.error ? { ...(context.pending ?? { op: context.error.op, params: {} }) } : null,
      error: null,
      opSeq: (context.opSeq ?? 0) + 1,
    })),
    rememberResume: assign(({ context }, params: { from: string }) => ({
      resume: originOf(params.from, context),
      pending: null,
    })),
    forgetResume: assign({ resume: null }),
    ...healthActions(DEFAULT_HEALTH_POLICY),
    clearHealth: assign({ health: undefined }),
    identify: assign(({ context, event }) =>
      event.type === 'IDENTIFIED' && !context.identity ? { identity: { serial: event.serial, source: event.source } } : {},
    ),
    freshCard: assign(({ context, event }) => {
      if (event.type !== 'REPLACED') return {};
      const { maintenance } = context;
      const identity = { serial: event.serial, source: event.source };
      return { ...initialContext({ ...context, identity }), opSeq: context.opSeq, health: undefined, ...(maintenance ? { maintenance } : {}) };
    }),
    mark: assign(({ context, event }) =>
      event.type === 'MAINTAIN' ? { maintenance: nextMark(context.maintenance ?? null, event.scope, true, event.at ?? 0) } : {},
    ),
    unmark: assign(({ context, event }) =>
      event.type === 'END_MAINTENANCE' ? { maintenance: nextMark(context.maintenance ?? null, event.scope, false, event.at ?? 0) } : {},
    ),
  },
}).createMachine({
  id: 'accelerator',
  context: ({ input }) => initialContext(input),
  initial: ACCELERATOR_INITIAL,
  // Health and maintenance hold in every state (a child state refusing one says so).
  on: {
    HEALTH: { actions: 'applyHealth' },
    CLEAR_HEALTH: { guard: 'isUnhealthy', actions: 'clearHealth' },
    MAINTAIN: { actions: 'mark' },
    END_MAINTENANCE: { guard: 'isMarkedBy', actions: 'unmark' },
    IDENTIFIED: { actions: 'identify' },
  },
  states: {
    inactive: {
      on: {
        HOST_LOST: lost('inactive'),
        ENABLE: { target: 'installing', actions: 'startOp' },
        REMOVE: { target: 'removed' },
        REPLACED: REPLACED,
      },
    },
    installing: operation('installing', ['busy', 'transient'], { target: 'ready', actions: 'finishOp' }, 'error'),
    ready: {
      tags: ['allocatable', 'usable'],
      on: {
        HOST_LOST: lost('ready'),
        PROGRAM: { target: 'programming', actions: 'startOp' },
        ATTACH: { guard: 'hasFreeHandle', target: 'attaching', actions: 'startOp' },
        DISABLE: { target: 'uninstalling', actions: 'startOp' },
        RESET: { target: 'resetting', actions: 'startOp' },
        REMOVE: { target: 'removed' },
        REPLACED: REPLACED,
      },
    },
    programming: {
      ...PROGRAMMING,
      on: {
        ...PROGRAMMING.on,
        // A programming refused before it touched the card (a bad checksum) or rolled back to the
        // previous image leaves the card in service as it was, its failure recorded; only one
        // that may have left it half-programmed goes to `error`. A retry never replays it.
        OP_FAILED: [
          { guard: and(['isCurrentOp', 'leftUnchanged', 'isProgrammed']), target: 'programmed', actions: 'recordFailure' },
          { guard: and(['isCurrentOp', 'leftUnchanged']), target: 'ready', actions: 'recordFailure' },
          { guard: 'isCurrentOp', target: 'error', actions: 'recordFailure' },
        ],
      },
    },
    programmed: {
      tags: ['allocatable', 'usable'],
      on: {
        HOST_LOST: lost('programmed'),
        PROGRAM: { target: 'programming', actions: 'startOp' },
        ATTACH: { guard: 'hasFreeHandle', target: 'attaching', actions: 'startOp' },
        DISABLE: { target: 'uninstalling', actions: 'startOp' },
        RESET: { target: 'resetting', actions: 'startOp' },
        REMOVE: { target: 'removed', actions: 'clearProgram' },
        REPLACED: REPLACED,
      },
    },
    // A failed attach leaves the accelerator where it was: the ARQ records the failure.
    attaching: { ...ATTACHING, on: { ...ATTACHING.on, INTERRUPTED: INTERRUPTED_ATTACH } },
    settleAfterFailedAttach: {
      tags: ['transient', 'usable'],
      always: afterAttachOrDetach.map((t) => ({ ...t, actions: 'finishOp' as const })),
      on: { INTERRUPTED: INTERRUPTED_ATTACH },
    },
    // No PROGRAM, DISABLE or REMOVE here: they would pull the device from under an instance.
    attached: {
      tags: ['in-use', 'allocatable', 'usable'],
      on: {
        HOST_LOST: lost('attached'),
        ATTACH: { guard: 'hasFreeHandle', target: 'attaching', actions: 'startOp' },
        DETACH: { guard: 'holdsHandle', target: 'detaching', actions: 'startOp' },
      },
    },
    detaching: operation('detaching', ['busy', 'in-use', 'transient', 'usable'], { target: 'settleAfterDetach', actions: 'removeAllocation' }, 'error'),
    settleAfterDetach: {
      tags: ['transient', 'usable'],
      always: afterAttachOrDetach.map((t) => ({ ...t, actions: 'finishOp' as const })),
      on: { INTERRUPTED: INTERRUPTED_OP },
    },
    // Only from ready or programmed: a reset never pulls a device from under an instance.
    resetting: operation('resetting', ['busy', 'transient'], { target: 'settleAfterReset', actions: ['clearHealth', 'finishOp'] }, 'error'),
    settleAfterReset: {
      tags: ['transient'],
      always: afterAttachOrDetach.map((t) => ({ ...t, actions: 'finishOp' as const })),
      on: { INTERRUPTED: INTERRUPTED_OP },
    },
    uninstalling: operation('uninstalling', ['busy', 'transient'], { target: 'inactive', actions: ['clearProgram', 'finishOp'] }, 'error'),
    error: {
      on: {
        HOST_LOST: lost('error'),
        RETRY: [
          { guard: { type: 'failedOpIs', params: { op: 'install' } }, target: 'installing', actions: 'restartFailedOp' },
          { guard: { type: 'failedOpIs', params: { op: 'program' } }, target: 'programming', actions: 'restartFailedOp' },
          { guard: { type: 'failedOpIs', params: { op: 'detach' } }, target: 'detaching', actions: 'restartFailedOp' },
          { guard: { type: 'failedOpIs', params: { op: 'uninstall' } }, target: 'uninstalling', actions: 'restartFailedOp' },
          { guard: { type: 'failedOpIs', params: { op: 'reset' } }, target: 'resetting', actions: 'restartFailedOp' },
        ],
        REMOVE: { guard: 'hasNoAllocations', target: 'removed' },
        RELEASE: { guard: 'holdsInstance', actions: 'releaseInstance' },
        REPLACED: { ...REPLACED, guard: 'hasNoAllocations' },
      },
    },
    offline: {
      on: {
        HOST_LOST: {},
        HOST_BACK: [
          { guard: { type: 'resumeIs', params: { state: 'attached' } }, target: 'attached', actions: 'forgetResume' },
          { guard: { type: 'resumeIs', params: { state: 'programmed' } }, target: 'programmed', actions: 'forgetResume' },
          { guard: { type: 'resumeIs', params: { state: 'ready' } }, target: 'ready', actions: 'forgetResume' },
          { guard: { type: 'resumeIs', params: { state: 'error' } }, target: 'error', actions: 'forgetResume' },
          { guard: { type: 'resumeIs', params: { state: 'removed' } }, target: 'removed', actions: 'forgetResume' },
          { target: 'inactive', actions: 'forgetResume' },
        ],
        // Gone while its host was away, and nobody holds it: safe to drop.
        REMOVE: { guard: 'hasNoAllocations', target: 'removed', actions: 'forgetResume' },
        // Its host is gone (for good, perhaps): nothing can detach it there.
        RELEASE: { guard: 'holdsInstance', actions: 'releaseInstance' },
      },
    },
    removed: {
      on: {
        REDISCOVERED: { target: 'inactive' },
        // Back, but another card: a fresh record, nothing of the one that left.
        REPLACED: REPLACED,
        HOST_LOST: {},
        // Gone: nothing to check or mark (a mark set before stays cancellable).
        HEALTH: {},
        MAINTAIN: {},
      },
    },
  },
});

/**
 * `applyHealth` under `policy`: the machine's default, and what the hosting actor provides with
 * the configured hysteresis (`machine.provide({ actions: healthActions(policy) })`).
 */
export function healthActions(policy: HealthPolicy) {
  return {
    applyHealth: assign<AcceleratorContext, AcceleratorEvent, undefined, AcceleratorEvent, never>(({ context, event }) => {
      if (event.type !== 'HEALTH') return {};
      const before = context.health ?? HEALTHY;
      const after = nextHealth(before, event, policy);
      if (after === before) return {};
      return { health: after.status === 'ok' && after.bad === 0 && after.good === 0 ? undefined : after };
    }),
  };
}

/** What the `runDriverOp` effect runs, from the context as the operation starts. */
export function opInput(ctx: AcceleratorContext): DriverOpInput {
  return { op: ctx.pending?.op ?? 'install', params: ctx.pending?.params ?? {}, id: ctx.id, host: ctx.host, seq: ctx.opSeq ?? 0 };
}

function stripType(event: { type: string } & Record<string, unknown>): Record<string, unknown> {
  const { type: _type, ...rest } = event;
  return Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
}

/** An operation's failure as the reason an operator reads. */
export function reasonOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  return 'driver operation failed';
}

export type AcceleratorMachine = typeof acceleratorMachine;
