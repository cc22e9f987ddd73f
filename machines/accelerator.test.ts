import { describe, expect, it } from 'vitest';
import { getShortestPaths } from '@xstate/graph';
import { createActor, transition, type SnapshotFrom } from 'xstate';
import { acceleratorMachine, conditionTags, healthActions, type AcceleratorEvent } from './accelerator.js';

type Snap = SnapshotFrom<typeof acceleratorMachine>;

const input = { id: 'acc-1', host: 'compute-1', capacity: 2 };
const H1 = 'handle-1';
const H2 = 'handle-2';
/** The outcome of the operation `s` is running, as the `runDriverOp` effect sends it. */
const done = (s: Snap): AcceleratorEvent => ({ type: 'OP_DONE', seq: s.context.opSeq ?? 0, output: {} });
const fail = (s: Snap): AcceleratorEvent => ({ type: 'OP_FAILED', seq: s.context.opSeq ?? 0, reason: 'device on fire' });

/** Every event the traversal may send, system events and driver outcomes included. */
function eventsFor(s: Snap): AcceleratorEvent[] {
  const held = s.context.allocations.map((a) => a.handleUuid);
  const free = [H1, H2].find((h) => !held.includes(h)) ?? H1;
  return [
    { type: 'ENABLE' },
    { type: 'DISABLE' },
    { type: 'PROGRAM', bitstreamId: 'bs-1' },
    { type: 'ATTACH', handleUuid: free, instanceUuid: 'vm-1' },
    { type: 'DETACH', handleUuid: held[0] ?? H1 },
    { type: 'RETRY' },
    { type: 'REMOVE' },
    { type: 'RESET' },
    { type: 'REDISCOVERED' },
    { type: 'HOST_LOST' },
    { type: 'HOST_BACK' },
    done(s),
    fail(s),
  ];
}

const serialize = (s: Snap): string =>
  `${String(s.value)}|${s.context.allocations.length}|${s.context.program ? 'p' : '-'}|${s.context.error?.op ?? '-'}|${s.context.resume ?? '-'}`;

const paths = getShortestPaths(acceleratorMachine, { input, events: eventsFor, serializeState: serialize as never });
const snapshots = paths.map((p) => p.state as Snap);

/** A reachable snapshot in `state` (optionally with allocations), found by the graph walk. */
function reach(state: string, pred: (s: Snap) => boolean = () => true): Snap {
  const s = snapshots.find((x) => x.value === state && pred(x));
  if (!s) throw new Error(`state ${state} not reachable`);
  return s;
}

function next(s: Snap, ev: AcceleratorEvent | ((s: Snap) => AcceleratorEvent)): Snap {
  return transition(acceleratorMachine, s, typeof ev === 'function' ? ev(s) : ev)[0];
}

describe('accelerator machine', () => {
  it('reaches every state it declares (no state is left untested)', () => {
    const declared = Object.keys(acceleratorMachine.root.states).filter((k) => !k.startsWith('settle'));
    const reached = new Set(snapshots.map((s) => String(s.value)));
    expect([...reached].sort()).toEqual(declared.sort());
  });

  // The operator's table: for each resting state, which events are allowed and where they lead.
  const table: Record<string, Partial<Record<AcceleratorEvent['type'], string>>> = {
    inactive: { ENABLE: 'installing', REMOVE: 'removed', HOST_LOST: 'offline' },
    ready: { PROGRAM: 'programming', ATTACH: 'attaching', DISABLE: 'uninstalling', RESET: 'resetting', REMOVE: 'removed', HOST_LOST: 'offline' },
    programmed: { PROGRAM: 'programming', ATTACH: 'attaching', DISABLE: 'uninstalling', RESET: 'resetting', REMOVE: 'removed', HOST_LOST: 'offline' },
    attached: { ATTACH: 'attaching', DETACH: 'detaching', HOST_LOST: 'offline' },
    error: { RETRY: 'installing', REMOVE: 'removed', HOST_LOST: 'offline' },
    offline: { HOST_BACK: 'inactive', REMOVE: 'removed' },
    removed: { REDISCOVERED: 'inactive' },
    installing: { HOST_LOST: 'offline' },
    programming: { HOST_LOST: 'offline' },
    attaching: { HOST_LOST: 'offline' },
    detaching: { HOST_LOST: 'offline' },
    uninstalling: { HOST_LOST: 'offline' },
    resetting: { HOST_LOST: 'offline' },
  };
  const from: Record<string, Snap> = {
    inactive: reach('inactive'),
    ready: reach('ready'),
    programmed: reach('programmed'),
    attached: reach('attached', (s) => s.context.allocations.length === 1),
    error: reach('error', (s) => s.context.error?.op === 'install'),
    offline: reach('offline', (s) => s.context.resume === 'inactive'),
    removed: reach('removed'),
    installing: reach('installing'),
    programming: reach('programming'),
    attaching: reach('attaching'),
    detaching: reach('detaching'),
    uninstalling: reach('uninstalling'),
    resetting: reach('resetting'),
  };
  const all: AcceleratorEvent['type'][] = [
    'ENABLE',
    'DISABLE',
    'PROGRAM',
    'ATTACH',
    'DETACH',
    'RETRY',
    'REMOVE',
    'REDISCOVERED',
    'HOST_LOST',
    'HOST_BACK',
    'RESET',
  ];

  for (const [state, allowed] of Object.entries(table)) {
    for (const type of all) {
      const target = allowed[type];
      it(`${state} ${target ? `--${type}--> ${target}` : `refuses ${type}`}`, () => {
        const s = from[state]!;
        const ev = eventsFor(s).find((e) => e.type === type)!;
        if (target) {
          expect(s.can(ev)).toBe(true);
          expect(next(s, ev).value).toBe(target);
        } else {
          expect(s.can(ev)).toBe(false);
        }
      });
    }
  }

  it("keeps the driver's reason in error and retries the operation that failed", () => {
    const programming = reach('programming');
    const failed = next(programming, fail);
    expect(failed.value).toBe('error');
    expect(failed.context.error).toEqual({ op: 'program', reason: 'device on fire' });
    const retried = next(failed, { type: 'RETRY' });
    expect(retried.value).toBe('programming');
    expect(retried.context.pending).toEqual({ op: 'program', params: { bitstreamId: 'bs-1' } });
    expect(next(retried, done).context.program).toEqual({ bitstreamId: 'bs-1' });
  });

  it('guards an attached accelerator: no reprogram, uninstall or removal while an instance holds it', () => {
    const attached = reach('attached');
    for (const type of ['PROGRAM', 'DISABLE', 'REMOVE'] as const) expect(attached.can({ type } as AcceleratorEvent)).toBe(false);
    expect(attached.hasTag('in-use')).toBe(true);
  });

  it('takes a second instance while a handle is free, and refuses a third', () => {
    const one = reach('attached', (s) => s.context.allocations.length === 1);
    const held = one.context.allocations[0]!.handleUuid;
    const free = held === H1 ? H2 : H1;
    expect(one.can({ type: 'ATTACH', handleUuid: held, instanceUuid: 'vm-2' })).toBe(false);
    const two = next(next(one, { type: 'ATTACH', handleUuid: free, instanceUuid: 'vm-2' }), done);
    expect(two.context.allocations.map((a) => a.handleUuid)).toEqual([held, free]);
    expect(two.can({ type: 'ATTACH', handleUuid: 'handle-3', instanceUuid: 'vm-3' })).toBe(false);
    const back = next(next(two, { type: 'DETACH', handleUuid: held }), done);
    expect(back.value).toBe('attached');
    expect(back.context.allocations.map((a) => a.handleUuid)).toEqual([free]);
  });

  it('returns to programmed after the last detach, and a failed attach leaves it where it was', () => {
    const programmed = reach('programmed');
    const attached = next(next(programmed, { type: 'ATTACH', handleUuid: H1, instanceUuid: 'vm-1' }), done);
    expect(attached.value).toBe('attached');
    expect(next(next(attached, { type: 'DETACH', handleUuid: H1 }), done).value).toBe('programmed');
    const failedAttach = next(next(programmed, { type: 'ATTACH', handleUuid: H1, instanceUuid: 'vm-1' }), fail);
    expect(failedAttach.value).toBe('programmed');
    expect(failedAttach.context.error).toEqual({ op: 'attach', reason: 'device on fire' });
  });

  it('keeps allocations while offline and returns to attached when the host is back', () => {
    const attached = reach('attached');
    const off = next(attached, { type: 'HOST_LOST' });
    expect(off.value).toBe('offline');
    expect(off.context.allocations).toHaveLength(1);
    expect(off.can({ type: 'REMOVE' })).toBe(false);
    expect(next(off, { type: 'HOST_BACK' }).value).toBe('attached');
    const wasInstalling = next(reach('installing'), { type: 'HOST_LOST' });
    expect(wasInstalling.context.resume).toBe('inactive');
  });

  it('tags the questions the API asks', () => {
    expect(reach('installing').hasTag('busy')).toBe(true);
    expect(reach('ready').hasTag('allocatable')).toBe(true);
    expect(reach('inactive').hasTag('allocatable')).toBe(false);
  });

  it('ignores an outcome that comes late, after its operation was given up', () => {
    const installing = next(reach('inactive'), { type: 'ENABLE' });
    const late = done(installing);
    // The host goes away and comes back; the operator enables again: a new operation runs.
    const again = next(next(next(installing, { type: 'HOST_LOST' }), { type: 'HOST_BACK' }), { type: 'ENABLE' });
    expect(again.value).toBe('installing');
    expect(next(again, late).value).toBe('installing');
    expect(next(again, done).value).toBe('ready');
  });

  it('round-trips through its persisted snapshot', () => {
    const s = reach('attached');
    const restored = createActor(acceleratorMachine, { input, snapshot: acceleratorMachine.resolveState({ value: 'attached', context: s.context }) }).start();
    expect(restored.getSnapshot().value).toBe('attached');
    expect(restored.getSnapshot().context.allocations).toEqual(s.context.allocations);
  });
});

describe('accelerator health and maintenance (context beside the lifecycle)', () => {
  // The conductor's hysteresis: 3 bad checks to quarantine, 3 good ones over 30 s to return.
  const machine = acceleratorMachine.provide({ actions: healthActions({ enterAfter: 3, leaveAfter: 3, stableForMs: 30_000 }) });
  const step = (s: Snap, ev: AcceleratorEvent): Snap => transition(machine, s, ev)[0];
  const at0 = 1_000_000;
  const bad = (at: number, severity: 'transient' | 'fatal' = 'transient'): AcceleratorEvent => ({
    type: 'HEALTH',
    ok: false,
    severity,
    reason: 'ECC errors',
    at,
  });
  const good = (at: number): AcceleratorEvent => ({ type: 'HEALTH', ok: true, at });
  const statusOf = (s: Snap): string => s.context.health?.status ?? 'ok';
  const readyIn = (m: typeof machine): Snap => m.resolveState({ value: 'ready', context: snapshots.find((x) => x.value === 'ready')!.context });

  it('degrades on one bad check, still in service, and recovers once stable', () => {
    let s = step(readyIn(machine), bad(at0));
    expect(statusOf(s)).toBe('degraded');
    expect(conditionTags(s.context)).toEqual(['degraded']);
    expect(s.can({ type: 'ATTACH', handleUuid: H1, instanceUuid: 'vm-1' })).toBe(true);
    for (let i = 1; i <= 3; i++) s = step(s, good(at0 + i * 15_000));
    expect(statusOf(s)).toBe('ok');
    expect(s.context.health).toBeUndefined();
  });

  it('quarantines a device flapping at 10 Hz once, and returns it by itself when it has been stable', () => {
    let s = readyIn(machine);
    const changes = new Set<number | null>();
    // Ten seconds at 10 Hz, ending on a bad check.
    for (let i = 0; i <= 100; i++) {
      s = step(s, i % 2 === 0 ? bad(at0 + i * 100) : good(at0 + i * 100));
      if (statusOf(s) === 'quarantined') changes.add(s.context.health!.since);
    }
    expect(statusOf(s)).toBe('quarantined');
    // Entered once: the status never left quarantine while it flapped.
    expect(changes.size).toBe(1);
    expect(conditionTags(s.context)).toEqual(['quarantined', 'reserved']);
    expect(s.can({ type: 'ATTACH', handleUuid: H1, instanceUuid: 'vm-1' })).toBe(false);
    expect(s.value).toBe('ready');
    // Three good checks 10 s apart are not yet 30 s of calm; the fourth is.
    const calm = at0 + 60_000;
    for (let i = 0; i < 3; i++) s = step(s, good(calm + i * 10_000));
    expect(statusOf(s)).toBe('quarantined');
    s = step(s, good(calm + 30_000));
    expect(statusOf(s)).toBe('ok');
    expect(s.can({ type: 'ATTACH', handleUuid: H1, instanceUuid: 'vm-1' })).toBe(true);
  });

  it('keeps a fatal fault until an operator clears it or resets the device', () => {
    let s = step(readyIn(machine), bad(at0, 'fatal'));
    expect(s.context.health).toMatchObject({ status: 'quarantined', fatal: true, reason: 'ECC errors' });
    for (let i = 1; i <= 10; i++) s = step(s, good(at0 + i * 60_000));
    expect(statusOf(s)).toBe('quarantined');
    expect(statusOf(step(s, { type: 'CLEAR_HEALTH' }))).toBe('ok');
    const resetting = step(s, { type: 'RESET' });
    expect(resetting.value).toBe('resetting');
    expect(resetting.context.pending?.op).toBe('reset');
    const back = step(resetting, { type: 'OP_DONE', seq: resetting.context.opSeq ?? 0 });
    expect(back.value).toBe('ready');
    expect(statusOf(back)).toBe('ok');
    const failed = step(resetting, { type: 'OP_FAILED', seq: resetting.context.opSeq ?? 0, reason: 'reset refused' });
    expect(failed.value).toBe('error');
    expect(step(failed, { type: 'RETRY' }).value).toBe('resetting');
  });

  it('never takes a quarantined device from its instance, and never resets one in use', () => {
    const attached = machine.resolveState({ value: 'attached', context: reach('attached').context });
    let s = attached;
    for (let i = 0; i < 3; i++) s = step(s, bad(at0 + i));
    expect(s.value).toBe('attached');
    expect(s.context.allocations).toHaveLength(1);
    expect(s.can({ type: 'RESET' })).toBe(false);
    expect(s.can({ type: 'DETACH', handleUuid: s.context.allocations[0]!.handleUuid })).toBe(true);
    expect(s.can({ type: 'ATTACH', handleUuid: 'handle-2', instanceUuid: 'vm-2' })).toBe(false);
    expect(s.can({ type: 'CLEAR_HEALTH' })).toBe(true);
    expect(reach('ready').can({ type: 'CLEAR_HEALTH' })).toBe(false);
  });

  it('drains a marked device: draining while held, maintenance once idle, cancelled with nothing lost', () => {
    const attached = reach('attached');
    const marked = next(attached, { type: 'MAINTAIN', scope: 'device', at: at0 });
    expect(marked.value).toBe('attached');
    expect(conditionTags(marked.context)).toEqual(['draining', 'reserved']);
    expect(marked.can({ type: 'ATTACH', handleUuid: 'handle-2', instanceUuid: 'vm-2' })).toBe(false);
    const idle = next(next(marked, { type: 'DETACH', handleUuid: marked.context.allocations[0]!.handleUuid }), done);
    expect(conditionTags(idle.context)).toEqual(['maintenance', 'reserved']);
    // A host drain on top: cancelling it keeps the device's own mark, and the first mark's time.
    const both = next(idle, { type: 'MAINTAIN', scope: 'host', at: at0 + 5 });
    expect(both.context.maintenance).toEqual({ device: true, host: true, since: at0 });
    const hostCancelled = next(both, { type: 'END_MAINTENANCE', scope: 'host' });
    expect(hostCancelled.context.maintenance).toEqual({ device: true, host: false, since: at0 });
    const cancelled = next(hostCancelled, { type: 'END_MAINTENANCE', scope: 'device' });
    expect(cancelled.context.maintenance).toBeNull();
    expect(cancelled.can({ type: 'END_MAINTENANCE', scope: 'device' })).toBe(false);
    expect(cancelled.can({ type: 'ATTACH', handleUuid: H1, instanceUuid: 'vm-1' })).toBe(true);
    // Cancelled mid-drain: the instance never noticed.
    const midway = next(marked, { type: 'END_MAINTENANCE', scope: 'device' });
    expect(midway.value).toBe('attached');
    expect(midway.context.allocations).toEqual(attached.context.allocations);
    expect(reach('removed').can({ type: 'MAINTAIN', scope: 'device' })).toBe(false);
  });
});
