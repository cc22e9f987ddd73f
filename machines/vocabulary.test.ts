import { describe, expect, it } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import { ACCELERATOR_STATES, acceleratorMachine, AcceleratorStates } from './accelerator.js';
import { ARQ_STATES, arqMachine, ArqStates, arqTags, CYBORG_ARQ_STATES, cyborgState } from './arq.js';
import { DRIVER_STATES, driverMachine } from './driver.js';
import { HOST_STATES, hostMachine } from './host.js';
import { HOST_DELETED, NOT_YET, TRANSITION_ENDS } from './states.js';
import { recoverInterrupted } from './vocabulary.js';

/** The vocabulary code outside machines/ uses is each machine's own: no state missing, none invented. */
describe('state vocabularies', () => {
  const cases: [string, AnyStateMachine, readonly string[]][] = [
    ['accelerator', acceleratorMachine, ACCELERATOR_STATES],
    ['arq', arqMachine, ARQ_STATES],
    ['host', hostMachine, HOST_STATES],
    ['driver', driverMachine, DRIVER_STATES],
  ];
  it.each(cases)("the %s machine's states are exactly its exported names", (_n, machine, names) => {
    expect([...names].sort()).toEqual(Object.keys(machine.config.states ?? {}).sort());
  });

  it('names map to themselves', () => {
    expect(AcceleratorStates.removed).toBe('removed');
    expect(ArqStates.DeletePending).toBe('DeletePending');
  });

  it('ARQ tags answer what readers asked of state names: resolved as Nova reads it, in flight for the orphan sweep', () => {
    const resolved = ARQ_STATES.filter((s) => arqTags(s).includes('resolved'));
    expect(resolved).toEqual(['Bound', 'BindFailed', 'Unbinding', 'Deleting', 'DeletePending']);
    expect(ARQ_STATES.filter((s) => arqTags(s).includes('in-flight'))).toEqual(['BindStarted', 'Unbinding', 'Deleting', 'DeletePending']);
  });

  it("Cyborg's ARQ names are ours less the two it never shows, each state shown as one of them", () => {
    expect(CYBORG_ARQ_STATES).toEqual(ARQ_STATES.filter((s) => s !== ArqStates.Unbinding && s !== ArqStates.DeletePending));
    expect(new Set(ARQ_STATES.map(cyborgState))).toEqual(new Set(CYBORG_ARQ_STATES));
  });

  it("resolved, as Nova's bind_state=resolved reads it, is exactly Cyborg's Bound, BindFailed and Deleting", () => {
    for (const s of ARQ_STATES) expect(arqTags(s).includes('resolved'), s).toBe(['Bound', 'BindFailed', 'Deleting'].includes(cyborgState(s)));
  });

  it("a transition's ends are every machine's states, each once, a birth's start and a deleted host's end", () => {
    const all = [...ACCELERATOR_STATES, ...ARQ_STATES, ...HOST_STATES, ...DRIVER_STATES, NOT_YET, HOST_DELETED];
    expect([...TRANSITION_ENDS].sort()).toEqual([...new Set(all)].sort());
    expect(TRANSITION_ENDS.length).toBe(new Set(TRANSITION_ENDS).size);
  });
});

/** Crash recovery is the machines' INTERRUPTED event: where a record saved mid-effect comes back. */
describe('recovery from an interrupted effect', () => {
  const arq = (value: string) => ({
    value,
    context: { uuid: 'a', deviceProfileName: 'p', deviceProfileGroupId: 0, projectId: null, binding: null, boundTo: null, error: null },
  });
  it.each([
    ['BindStarted', 'BindFailed'],
    ['Unbinding', 'UnbindFailed'],
    ['Deleting', 'DeletePending'],
  ])('an ARQ saved in %s comes back in %s, its error "interrupted"', (from, to) => {
    const out = recoverInterrupted(arqMachine, arq(from));
    expect(out).toMatchObject({ interrupted: from, record: { value: to, context: { error: 'interrupted' } } });
  });

  it.each(['Initial', 'Bound', 'BindFailed', 'Unbound', 'UnbindFailed', 'DeletePending'])('an ARQ at rest in %s is restored as it was', (value) => {
    expect(recoverInterrupted(arqMachine, arq(value))).toEqual({ record: arq(value) });
  });

  const acc = (value: string, extra: Record<string, unknown> = {}) => ({
    value,
    context: { id: 'x', host: 'h', capacity: 1, allocations: [], program: null, pending: null, error: null, resume: null, ...extra },
  });
  it.each(['installing', 'programming', 'detaching', 'resetting', 'uninstalling', 'settleAfterDetach', 'settleAfterReset'])(
    'an accelerator saved in %s comes back in error ("interrupted"), RETRY allowed',
    (value) => {
      const out = recoverInterrupted(acceleratorMachine, acc(value, { pending: { op: 'install', params: {} } }));
      expect(out).toMatchObject({ interrupted: value, record: { value: 'error', context: { error: { op: 'install', reason: 'interrupted' } } } });
    },
  );

  it('an interrupted attach handed nothing to an instance: back to ready, programmed or attached as it was', () => {
    const pending = { op: 'attach', params: { handleUuid: 'h2', instanceUuid: 'vm' } };
    expect(recoverInterrupted(acceleratorMachine, acc('attaching', { pending })).record.value).toBe('ready');
    expect(recoverInterrupted(acceleratorMachine, acc('attaching', { pending, program: { bitstreamId: 'b' } })).record.value).toBe('programmed');
    const held = recoverInterrupted(acceleratorMachine, acc('attaching', { pending, capacity: 2, allocations: [{ handleUuid: 'h1', instanceUuid: 'vm0' }] }));
    expect(held.record).toMatchObject({ value: 'attached', context: { pending: null, error: { op: 'attach', reason: 'interrupted' } } });
  });

  it.each(['inactive', 'ready', 'programmed', 'attached', 'error', 'offline', 'removed'])('an accelerator at rest in %s is restored as it was', (value) => {
    expect(recoverInterrupted(acceleratorMachine, acc(value))).toEqual({ record: acc(value) });
  });
});
