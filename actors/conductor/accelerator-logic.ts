import {
  ACCELERATOR_INITIAL,
  acceleratorMachine,
  DEFAULT_HEALTH_POLICY,
  healthActions,
  initialContext,
  opInput,
  reasonOf,
  recoverInterrupted,
  type AcceleratorEvent,
  type AcceleratorState,
  type DriverOpInput,
  type HealthPolicy,
} from '../../machines/index.js';
import type { TransitionRecord } from '../../model/index.js';
import type { AcceleratorRecord } from '../runtime/index.js';

export type AcceleratorLogic = ReturnType<typeof acceleratorMachine.provide>;

type AcceleratorInput = { id: string; host: string; capacity: number };

/**
 * A new accelerator's first record: the machine's initial state and context for `input`, as the
 * machine file declares them (a fleet's cold start registers 100,000 of these: no throwaway
 * actor each).
 */
export function initialRecordOf(input: AcceleratorInput): AcceleratorRecord {
  return { value: ACCELERATOR_INITIAL, context: initialContext(input) };
}

/**
 * The record an accelerator's actor starts from: its saved one, or a new accelerator's first. A
 * record saved in a transient state had its driver operation interrupted (a crash, a restart):
 * the machine says where that leaves it (its INTERRUPTED event), and `recovery` is the RECOVER
 * transition that commits it — the database must not keep the transient state the actor left.
 */
export function startingRecordOf(
  logic: AcceleratorLogic,
  saved: AcceleratorRecord | undefined,
  input: AcceleratorInput,
): { record: AcceleratorRecord; recovery?: Omit<TransitionRecord, 'kind' | 'id' | 'host'> } {
  if (!saved) return { record: initialRecordOf(input) };
  const { record, interrupted } = recoverInterrupted(logic, saved);
  if (interrupted === undefined) return { record };
  return {
    record,
    recovery: {
      event: 'RECOVER',
      from: interrupted as AcceleratorState,
      to: record.value as AcceleratorState,
      at: new Date().toISOString(),
      reason: 'interrupted',
      actor: 'conductor',
    },
  };
}

/** A maintenance or drain request says when it was made: the machine keeps no clock. */
export function stamped(event: AcceleratorEvent): AcceleratorEvent {
  if ((event.type === 'MAINTAIN' || event.type === 'END_MAINTENANCE') && event.at === undefined) return { ...event, at: Date.now() };
  return event;
}

/** The tags of `logic`'s state named `value` (a state node's: no running machine needed). */
export function tagsOf(logic: AcceleratorLogic, value: string): readonly string[] {
  return (logic.states as Record<string, { tags: readonly string[] } | undefined>)[value]?.tags ?? [];
}

/**
 * The accelerator machine with its effects provided: driver operations go to `runOp`, which
 * routes by `input.host`, and its outcome goes back to the machine tagged with the operation's
 * sequence number; the machine gives up on an operation after `opTimeoutMs` (its `opTimeout`
 * delay, per operation when a function: a programming takes longer) and drops whatever it answers later. Build it once per conductor. `base` lets tests
 * inject a faulty guard or action, as xstate's own tests do.
 */
export function acceleratorLogic(
  runOp: (input: DriverOpInput) => Promise<Record<string, unknown>>,
  opTimeoutMs: number | ((op: string | undefined) => number),
  base: typeof acceleratorMachine = acceleratorMachine,
  health: HealthPolicy = DEFAULT_HEALTH_POLICY,
): AcceleratorLogic {
  const deadline = typeof opTimeoutMs === 'number' ? () => opTimeoutMs : opTimeoutMs;
  return base.provide({
    delays: { opTimeout: ({ context }) => deadline(context.pending?.op) },
    actions: {
      ...healthActions(health),
      runDriverOp: ({ context, self }) => {
        const input = opInput(context);
        const seq = input.seq ?? 0;
        // An actor stopped meanwhile (shutdown, a crash's restart) takes no more events.
        const answer = (event: AcceleratorEvent): void => {
          if (self.getSnapshot().status === 'active') self.send(event);
        };
        runOp(input).then(
          (output) => answer({ type: 'OP_DONE', seq, output }),
          (err: unknown) => answer({ type: 'OP_FAILED', seq, reason: reasonOf(err), ...(unchangedBy(err) ? { unchanged: true } : {}) }),
        );
      },
    },
  });
}

/** Whether the agent said the failed operation left the device as it was. */
function unchangedBy(err: unknown): boolean {
  return (err as { details?: { unchanged?: unknown } } | undefined)?.details?.unchanged === true;
}
