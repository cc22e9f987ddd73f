import { assign, fromPromise, setup, type DoneActorEvent, type ErrorActorEvent } from 'xstate';
import { CyborgError } from '../errors/index.js';

export { DRIVER_STATES, DriverStates, type DriverState } from './states.js';

/**
 * The lifecycle of one driver on one host, as the conductor runs it on the host's agent:
 *
 *   uninstalled --INSTALL--> installing --> installed --UPDATE--> updating --> installed
 *   installed --UNINSTALL--> uninstalling --> uninstalled
 *
 * One operation at a time: while one runs (tag `busy`) every other request is refused. The
 * operation is the invoked actor `driverOp`, provided by the hosting actor (actors/services/driver-admin.ts):
 * it asks the agent and answers with what the agent now holds. Where the driver ends up is what
 * the agent says (`installed`), not what was asked; a failed operation leaves the driver where it
 * was, with the failure as `lastError`.
 *
 * Pure: no I/O. What the admin checks before sending an event (host online, no instance holding
 * one of the driver's accelerators) needs the whole conductor and stays there.
 */

export type DriverLifecycleOp = 'install' | 'uninstall' | 'update';

export interface DriverContext {
  id: string;
  host: string;
  name: string;
  version: string;
  /** The last operation's failure; cleared by the next success. `at` is stamped by the host. */
  lastError: { op: DriverLifecycleOp; reason: string; at?: string } | null;
}

export type DriverEvent = { type: 'INSTALL'; version?: string } | { type: 'UNINSTALL' } | { type: 'UPDATE'; version?: string };

/** What the `driverOp` actor is asked to run. */
export interface DriverOpRequest {
  op: DriverLifecycleOp;
  host: string;
  driver: string;
  version?: string;
}

/** What the agent holds once the operation is done. */
export interface DriverOpOutcome {
  installed: boolean;
  version: string;
}

export type DriverTag = 'busy';

/** The states a driver rests in (the others are its operations). */
export type DriverRestState = 'installed' | 'uninstalled';

/** An operation's failure as the reason an operator reads: a driver's own reason when it gave one. */
export function failureReason(err: unknown): string {
  const details = (err as { details?: { reason?: unknown } } | null)?.details;
  if (typeof details?.reason === 'string') return details.reason;
  if (err instanceof Error) return err.message;
  return String(err);
}

/** The operation a busy state runs, from the event that entered it. */
function request(op: DriverLifecycleOp) {
  return ({ context, event }: { context: DriverContext; event: DriverEvent }): DriverOpRequest => {
    const version = 'version' in event ? event.version : undefined;
    return { op, host: context.host, driver: context.name, ...(version ? { version } : {}) };
  };
}

/**
 * The operation's outcome, handed to the guard and action as params: only the invoke's onDone
 * has its done event typed (setup's guards and actions see the machine's own events).
 */
const outcome = ({ event }: { event: DoneActorEvent<DriverOpOutcome> }): DriverOpOutcome => event.output;

/** A busy state: runs `op`, rests where the agent says the driver is, or back at `from` on failure. */
function operation(op: DriverLifecycleOp, from: DriverRestState) {
  return {
    tags: ['busy'] as const,
    invoke: {
      id: 'driverOp',
      src: 'driverOp' as const,
      input: request(op),
      onDone: [
        { guard: { type: 'reportsInstalled' as const, params: outcome }, target: 'installed', actions: { type: 'adopt' as const, params: outcome } },
        { target: 'uninstalled', actions: { type: 'adopt' as const, params: outcome } },
      ],
      onError: { target: from, actions: { type: 'recordFailure' as const, params: ({ event }: { event: ErrorActorEvent }) => ({ op, error: event.error }) } },
    },
  };
}

export const driverMachine = setup({
  types: {
    context: {} as DriverContext,
    events: {} as DriverEvent,
    input: {} as DriverContext,
    tags: {} as DriverTag,
  },
  actors: {
    /** Provided by the hosting actor: runs the operation on the host's agent. */
    driverOp: fromPromise<DriverOpOutcome, DriverOpRequest>(async () => {
      throw new CyborgError('internal.error', 'driverOp is provided by the hosting actor');
    }),
  },
  guards: {
    reportsInstalled: (_, done: DriverOpOutcome) => done.installed,
  },
  actions: {
    adopt: assign((_, done: DriverOpOutcome) => ({ version: done.version, lastError: null })),
    recordFailure: assign((_, params: { op: DriverLifecycleOp; error: unknown }) => ({
      lastError: { op: params.op, reason: failureReason(params.error) },
    })),
  },
}).createMachine({
  id: 'driver',
  context: ({ input }) => input,
  initial: 'uninstalled',
  states: {
    uninstalled: {
      on: { INSTALL: 'installing' },
    },
    installing: operation('install', 'uninstalled'),
    installed: {
      on: { UNINSTALL: 'uninstalling', UPDATE: 'updating' },
    },
    updating: operation('update', 'installed'),
    uninstalling: operation('uninstall', 'installed'),
  },
});

export type DriverMachine = typeof driverMachine;
