import { describe, expect, it } from 'vitest';
import { initialTransition } from 'xstate';
import { acceleratorMachine } from '../../machines/index.js';
import { initialRecordOf } from './accelerator-logic.js';

describe("a new accelerator's first record", () => {
  it("is what xstate's initial transition gives, for each input", () => {
    const logic = acceleratorMachine.provide({});
    for (const input of [
      { id: 'a', host: 'h1', capacity: 1 },
      { id: 'b', host: 'h2', capacity: 4 },
    ]) {
      const [snap] = initialTransition(logic, input);
      expect(initialRecordOf(input)).toEqual({ value: snap.value, context: snap.context });
    }
  });
});
