import { describe, expect, it } from 'vitest';
import { initialTransition } from 'xstate';
import { acceleratorMachine } from '../machines/index.js';
import { initialRecordOf, type AcceleratorLogic } from './accelerator-actor.js';

describe('a new accelerator\'s first record', () => {
  it('is what xstate\'s initial transition gives, for each input', () => {
    const logic = acceleratorMachine.provide({}) as AcceleratorLogic;
    for (const input of [{ id: 'a', host: 'h1', capacity: 1 }, { id: 'b', host: 'h2', capacity: 4 }]) {
      const [snap] = initialTransition(logic, input);
      expect(initialRecordOf(logic, input)).toEqual({ value: snap.value, context: snap.context });
    }
  });

  it('still comes from xstate when the initial state changes the context on entry', () => {
    const logic = acceleratorMachine.provide({}) as AcceleratorLogic;
    const entering = Object.create(logic) as AcceleratorLogic;
    // A factory that disagrees with the machine's own start: the shortcut must not be taken.
    Object.defineProperty(entering, 'config', { value: { ...logic.config, context: () => ({ wrong: true }) } });
    const input = { id: 'c', host: 'h3', capacity: 2 };
    expect(initialRecordOf(entering, input).context).toMatchObject({ id: 'c', capacity: 2 });
  });
});
