import type { Change, MachineRecord } from '../../actors/runtime/index.js';
import type { TransitionRecord } from '../../model/index.js';

/**
 * A machine record of whatever context a test needs, typed as the record it stands in for: the
 * journal stores a context as data, so its tests hand it only the fields they look at (or a
 * shape no machine makes, to see it refused).
 */
export function recordOf<C>(value: string, context: Record<string, unknown> = {}): MachineRecord<C> {
  return { value, context: context as C };
}

/**
 * One transition of accelerator `id` on host h1 as its actor commits it (the record and its log
 * row); `n` is the commit's place in the test's order, its state's name (`s<n>`) and its request
 * id's suffix (`<id>/<n>`).
 */
export function acceleratorStep(id: string, n: number): Change[] {
  return [
    { type: 'accelerator', id, host: 'h1', record: recordOf(`s${n}`, { id, n }) },
    {
      type: 'transition',
      record: {
        kind: 'accelerator',
        id,
        host: 'h1',
        event: 'STEP',
        from: 'any' as TransitionRecord['from'],
        to: `s${n}` as TransitionRecord['to'],
        at: new Date().toISOString(),
        requestId: `${id}/${n}`,
      },
    },
  ];
}
