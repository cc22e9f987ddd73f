import { describe, expect, it } from 'vitest';
import { assign, createMachine, fromPromise, setup } from 'xstate';
import { acceleratorMachine, type AcceleratorContext, type DriverOpInput } from '../machines/index.js';
import { opInput } from '../machines/accelerator.js';
import { FlatHost } from './flat-host.js';
import { FlatMachine, UnsupportedMachineError, type FlatEvent } from './flat-machine.js';
import type { MachineRecord, TransitionRecord } from './journal.js';
import { MachineHost, type MachineOwner } from './machine-host.js';
import { silentLogger } from '../config/logger.js';

type Change = Omit<TransitionRecord, 'kind' | 'id' | 'host'>;

/** Everything a host tells its owner, and every driver operation its machine started. */
function recorder(): MachineOwner & { changes: unknown[]; crashes: unknown[]; ops: DriverOpInput[] } {
  return {
    changes: [],
    crashes: [],
    ops: [],
    onTransition(rec: Change, persisted: MachineRecord) {
      const { at: _at, ...rest } = rec;
      this.changes.push({ ...rest, persisted: structuredClone(persisted) });
    },
    onCrash(err: unknown) {
      this.crashes.push(err);
    },
  };
}

/** A small deterministic PRNG: a failing sequence is the same on every run. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const HANDLES = ['h1', 'h2', 'h3'];

/** Every kind of event the accelerator machine knows, with payloads its guards tell apart. */
function events(ctx: AcceleratorContext): FlatEvent[] {
  const seq = ctx.opSeq ?? 0;
  return [
    { type: 'ENABLE' }, { type: 'DISABLE' }, { type: 'RETRY' }, { type: 'REMOVE' }, { type: 'REDISCOVERED' },
    { type: 'HOST_LOST' }, { type: 'HOST_BACK' },
    { type: 'PROGRAM', bitstreamId: 'bs-1' }, { type: 'PROGRAM', functionId: 'fn-2' },
    ...HANDLES.map((h) => ({ type: 'ATTACH', handleUuid: h, instanceUuid: `vm-${h}`, arqUuid: `arq-${h}` })),
    ...HANDLES.map((h) => ({ type: 'DETACH', handleUuid: h })),
    { type: 'OP_DONE', seq, output: {} }, { type: 'OP_DONE', seq: seq - 1 },
    { type: 'OP_FAILED', seq, reason: 'device on fire' }, { type: 'OP_FAILED', seq: seq + 1, reason: 'stale' },
  ];
}

describe('the flat interpreter, against XState\'s own', () => {
  it('takes the accelerator machine through 400 random event sequences exactly as an XState actor does', () => {
    const record: MachineRecord = {
      value: 'inactive',
      context: { id: 'acc-1', host: 'compute-1', capacity: 2, allocations: [], program: null, pending: null, error: null, resume: null },
    };
    const visited = new Set<string>();
    for (let seed = 1; seed <= 400; seed++) {
      const rnd = prng(seed);
      const ours = recorder();
      const theirs = recorder();
      const effect = (owner: typeof ours) => ({ runDriverOp: ({ context }: { context: AcceleratorContext }) => { owner.ops.push(opInput(context)); } });
      const flat = new FlatHost(FlatMachine.of(acceleratorMachine.provide({ actions: effect(ours) as never })), record, ours);
      const xs = new MachineHost({ machine: acceleratorMachine.provide({ actions: effect(theirs) as never }), input: undefined, record, owner: theirs, log: silentLogger() }).start();
      for (let step = 0; step < 60; step++) {
        const ctx = xs.snapshot.context as AcceleratorContext;
        const all = events(ctx);
        const ev = all[Math.floor(rnd() * all.length)]!;
        const where = `seed ${seed}, step ${step}, ${JSON.stringify(ev)} in ${xs.value}`;
        expect(all.map((e) => flat.can(e)), where).toEqual(all.map((e) => xs.snapshot.can(e as never)));
        flat.send(ev, { requestId: `req-${step}` });
        xs.send(ev, { requestId: `req-${step}` });
        expect(flat.value, where).toBe(xs.value);
        visited.add(flat.value);
        expect(flat.context, where).toEqual(xs.snapshot.context);
        expect([...flat.tags].sort(), where).toEqual([...xs.snapshot.tags].sort());
      }
      expect(ours.changes).toEqual(theirs.changes);
      expect(ours.ops).toEqual(theirs.ops);
      expect(ours.changes.length).toBeGreaterThan(0);
      xs.stop();
    }
    // Not a vacuous walk: every stable and transient state was reached (the settle states are passed through).
    const states = Object.keys(acceleratorMachine.root.states).filter((s) => !s.startsWith('settle'));
    expect([...visited].sort()).toEqual(states.sort());
  });

  it('crashes as XState does on a throwing guard: the snapshot before the event kept, the owner told, later events ignored', () => {
    const machine = acceleratorMachine.provide({ guards: { hasFreeHandle: () => { throw new Error('bug in hasFreeHandle'); } } });
    const owner = recorder();
    const host = new FlatHost(FlatMachine.of(machine), { value: 'ready', context: { id: 'a', host: 'h', capacity: 1, allocations: [], program: null, pending: null, error: null, resume: null } }, owner);
    host.send({ type: 'ATTACH', handleUuid: 'h1', instanceUuid: 'vm' });
    expect(host.status).toBe('error');
    expect(host.value).toBe('ready');
    expect(String(owner.crashes[0])).toContain("Unable to evaluate guard 'hasFreeHandle' in transition for event 'ATTACH' in state node 'accelerator.ready':\nbug in hasFreeHandle");
    host.send({ type: 'DISABLE' });
    expect(host.value).toBe('ready');
    expect(owner.changes).toEqual([]);
  });

  it('takes an event an action sends while the machine is stepping after that step, as a mailbox would', () => {
    const owner = recorder();
    let host!: FlatHost;
    const machine = acceleratorMachine.provide({
      actions: { runDriverOp: ({ context }) => host.send({ type: 'OP_DONE', seq: context.opSeq ?? 0 }) },
    });
    host = new FlatHost(FlatMachine.of(machine), { value: 'inactive', context: { id: 'a', host: 'h', capacity: 1, allocations: [], program: null, pending: null, error: null, resume: null } }, owner);
    host.send({ type: 'ENABLE' }, { requestId: 'req-1' });
    expect(host.value).toBe('ready');
    expect(owner.changes.map((c) => (c as Change).to)).toEqual(['installing', 'ready']);
    // The driver's answer is the same request's doing.
    expect(owner.changes.map((c) => (c as Change).requestId)).toEqual(['req-1', 'req-1']);
  });

  it('runs the rest of what it claims as XState does: object assigns, params, inline guards, exit actions', () => {
    const log: string[] = [];
    const toy = setup({
      types: { context: {} as { n: number; last: string } },
      guards: { below: ({ context }, params: { max: number }) => context.n < params.max },
      actions: {
        note: (_args, params: { what: string }) => { log.push(params.what); },
        bump: assign({ n: ({ context }) => context.n + 1, last: 'bump' }),
      },
    }).createMachine({
      id: 'toy',
      context: { n: 0, last: '' },
      initial: 'idle',
      states: {
        idle: {
          exit: { type: 'note', params: ({ context }) => ({ what: `leave idle at ${context.n}` }) },
          on: {
            GO: [
              { guard: { type: 'below', params: { max: 2 } }, target: 'busy', actions: 'bump' },
              { guard: ({ context }) => context.n >= 2, target: 'done', actions: assign(({ event }) => ({ last: event.type })) },
            ],
          },
        },
        busy: { entry: { type: 'note', params: { what: 'enter busy' } }, always: { target: 'idle', actions: 'bump' } },
        done: { tags: ['finished'] },
      },
    });
    const owner = recorder();
    const flat = new FlatHost(FlatMachine.of(toy), { value: 'idle', context: { n: 0, last: '' } }, owner);
    const xs = new MachineHost({ machine: toy, input: undefined, record: { value: 'idle', context: { n: 0, last: '' } }, owner: recorder(), log: silentLogger() }).start();
    const theirs = log.splice(0);
    for (let i = 0; i < 3; i++) {
      flat.send({ type: 'GO' });
      const ours = log.splice(0);
      xs.send({ type: 'GO' });
      expect(ours).toEqual(log.splice(0));
      expect(flat.value).toBe(xs.value);
      expect(flat.context).toEqual(xs.snapshot.context);
    }
    expect(theirs).toEqual([]);
    expect(flat.value).toBe('done');
    expect(flat.context).toEqual({ n: 2, last: 'GO' });
    expect(flat.hasTag('finished')).toBe(true);
    xs.stop();
  });

  it('refuses, when compiling, a machine that uses what it does not run', () => {
    const nested = createMachine({ id: 'nested', initial: 'a', states: { a: { initial: 'x', states: { x: {} } } } });
    const delayed = createMachine({ id: 'delayed', initial: 'a', states: { a: { after: { 10: 'b' } }, b: {} } });
    const wildcard = createMachine({ id: 'wild', initial: 'a', states: { a: { on: { '*': 'b' } }, b: {} } });
    const invoking = setup({ actors: { p: fromPromise(async () => 1) } }).createMachine({ id: 'inv', initial: 'a', states: { a: { invoke: { src: 'p' } } } });
    const rooted = createMachine({ id: 'rooted', on: { X: { actions: assign({}) } }, initial: 'a', states: { a: {} } });
    for (const m of [nested, delayed, wildcard, invoking, rooted]) expect(() => FlatMachine.of(m)).toThrow(UnsupportedMachineError);
    expect(() => FlatMachine.of(acceleratorMachine)).not.toThrow();
  });
});
