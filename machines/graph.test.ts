import { describe, expect, it } from 'vitest';
import { acceleratorMachine, ARQ_EVENTS, arqMachine, OPERATOR_EVENTS } from './index.js';
import { eventLabel, machineGraph } from './graph.js';

describe('machine graphs for the visualizer, walked from the machines themselves', () => {
  const g = machineGraph(acceleratorMachine, OPERATOR_EVENTS);
  const edge = (from: string, to: string) => g.transitions.filter((t) => t.from === from && t.to === to);

  it('has every state of the accelerator machine, in lifecycle order, starting at inactive', () => {
    expect(g.initial).toBe('inactive');
    expect(g.states.map((s) => s.id)).toEqual(Object.keys(acceleratorMachine.root.states));
    expect(g.states.find((s) => s.id === 'installing')).toMatchObject({ tags: ['busy', 'transient'], invokes: ['runDriverOp'], transient: false });
    expect(g.states.find((s) => s.id === 'settleAfterDetach')).toMatchObject({ transient: true });
  });

  it('names operator events, driver outcomes, timeouts and guards as an operator reads them', () => {
    expect(edge('inactive', 'installing')).toEqual([{ from: 'inactive', to: 'installing', event: 'ENABLE', operator: true }]);
    expect(edge('installing', 'ready')).toEqual([{ from: 'installing', to: 'ready', event: 'done', operator: false }]);
    // A driver that does not answer in time fails too, after the machine's opTimeout.
    expect(edge('installing', 'error').map((t) => t.event)).toEqual(['failed', 'after opTimeout']);
    expect(edge('error', 'programming')).toEqual([{ from: 'error', to: 'programming', event: 'RETRY', guard: 'failedOpIs(op=program)', operator: true }]);
    expect(edge('settleAfterDetach', 'attached')).toEqual([{ from: 'settleAfterDetach', to: 'attached', event: '', guard: 'hasAllocations', operator: false }]);
  });

  it('never draws what the machine forbids: no PROGRAM, DISABLE or REMOVE out of attached', () => {
    const out = g.transitions.filter((t) => t.from === 'attached').map((t) => t.event);
    expect(out).not.toContain('PROGRAM');
    expect(out).not.toContain('DISABLE');
    expect(out).not.toContain('REMOVE');
    // Ignored events (targetless, like HOST_LOST while offline) are no edges.
    expect(g.transitions.filter((t) => t.from === 'offline' && t.event === 'HOST_LOST')).toEqual([]);
  });

  it("walks the ARQ machine too, with Cyborg's state names", () => {
    const arq = machineGraph(arqMachine, ARQ_EVENTS);
    expect(arq.initial).toBe('Initial');
    expect(arq.transitions).toContainEqual({ from: 'Initial', to: 'BindStarted', event: 'BIND', operator: true });
    expect(arq.transitions).toContainEqual({ from: 'BindStarted', to: 'Bound', event: 'done', operator: false });
  });

  it("turns XState's internal event names into short ones", () => {
    expect(eventLabel('OP_DONE')).toBe('done');
    expect(eventLabel('OP_FAILED')).toBe('failed');
    expect(eventLabel('xstate.done.actor.bind')).toBe('done');
    expect(eventLabel('xstate.error.actor.bind')).toBe('failed');
    expect(eventLabel('xstate.after.staleAfter.host.online')).toBe('after staleAfter');
    expect(eventLabel('ENABLE')).toBe('ENABLE');
  });
});
