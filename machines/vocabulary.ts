import { transition, type AnyStateMachine } from 'xstate';

/** The tags a machine's state node declares (no running actor needed). */
export function tagsOfState(machine: AnyStateMachine, state: string): readonly string[] {
  return (machine.states as Record<string, { tags: readonly string[] } | undefined>)[state]?.tags ?? [];
}

/** A record as the journal keeps it: the state's name and the machine's context. */
export interface StateRecord<C = Record<string, unknown>> {
  value: string;
  context: C;
}

/**
 * Crash recovery, as the machine itself says it: a record saved while an effect ran (a driver
 * operation, a bind, a release) is answered with the machine's `INTERRUPTED` event, computed as
 * a pure transition (no effect runs). Returns the record to restore from and the state left,
 * or the record unchanged when its state does not handle `INTERRUPTED` (nothing was under way).
 */
export function recoverInterrupted<C>(machine: AnyStateMachine, record: StateRecord<C>): { record: StateRecord<C>; interrupted?: string } {
  const node = (machine.states as Record<string, { on?: Record<string, unknown> } | undefined>)[record.value];
  if (!node?.on || !('INTERRUPTED' in node.on)) return { record };
  const from = machine.resolveState({ value: record.value, context: record.context } as never);
  const [next] = transition(machine, from, { type: 'INTERRUPTED' } as never);
  return { record: { value: String(next.value), context: next.context as C }, interrupted: record.value };
}

export { namesOf } from './states.js';
