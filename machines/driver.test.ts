import { describe, expect, it } from 'vitest';
import { getShortestPaths } from '@xstate/graph';
import { createActor, fromPromise, transition, type SnapshotFrom } from 'xstate';
import { driverMachine, failureReason, type DriverEvent, type DriverOpOutcome, type DriverOpRequest } from './driver.js';

type Snap = SnapshotFrom<typeof driverMachine>;

const input = { id: 'drv-1', host: 'compute-1', name: 'fake', version: '1.0', lastError: null };
const answered = (installed: boolean, version = '1.0') => ({ type: 'xstate.done.actor.driverOp', output: { installed, version } }) as unknown as DriverEvent;
const failed = { type: 'xstate.error.actor.driverOp', error: new Error('agent on fire') } as unknown as DriverEvent;
const events: DriverEvent[] = [
  { type: 'INSTALL' },
  { type: 'UNINSTALL' },
  { type: 'UPDATE', version: '2.0' },
  answered(true),
  answered(false),
  answered(true, '2.0'),
  failed,
];

const paths = getShortestPaths(driverMachine, {
  input,
  events,
  serializeState: ((s: Snap) => `${String(s.value)}|${s.context.version}|${s.context.lastError?.op ?? ''}`) as never,
});
const snaps = paths.map((p) => p.state as Snap);
const reach = (v: string): Snap => {
  const s = snaps.find((x) => x.value === v);
  if (!s) throw new Error(`${v} not reachable`);
  return s;
};

describe('driver machine', () => {
  it('reaches every state it declares', () => {
    expect([...new Set(snaps.map((s) => String(s.value)))].sort()).toEqual(Object.keys(driverMachine.root.states).sort());
  });

  // The operator's table: which requests each state takes, and where they lead.
  const table: Record<string, Partial<Record<DriverEvent['type'], string>>> = {
    uninstalled: { INSTALL: 'installing' },
    installed: { UNINSTALL: 'uninstalling', UPDATE: 'updating' },
    installing: {},
    uninstalling: {},
    updating: {},
  };
  for (const [state, allowed] of Object.entries(table)) {
    for (const type of ['INSTALL', 'UNINSTALL', 'UPDATE'] as const) {
      const target = allowed[type];
      it(`${state} ${target ? `--${type}--> ${target}` : `refuses ${type}`}`, () => {
        const s = reach(state);
        const ev = events.find((e) => e.type === type)!;
        expect(s.can(ev)).toBe(Boolean(target));
        if (target) expect(transition(driverMachine, s, ev)[0].value).toBe(target);
      });
    }
  }

  it('is busy exactly while an operation runs', () => {
    for (const s of snaps) expect(s.hasTag('busy'), String(s.value)).toBe(!['installed', 'uninstalled'].includes(String(s.value)));
  });

  it('rests where the agent says the driver is, at the version it reports, clearing the last failure', () => {
    const updating = transition(driverMachine, reach('installed'), { type: 'UPDATE', version: '2.0' })[0];
    const after = transition(driverMachine, updating, answered(true, '2.0'))[0];
    expect(after.value).toBe('installed');
    expect(after.context).toMatchObject({ version: '2.0', lastError: null });
    // An agent that says the install left nothing installed is believed.
    expect(transition(driverMachine, reach('installing'), answered(false))[0].value).toBe('uninstalled');
  });

  it('goes back where it was when an operation fails, with the failure as lastError', () => {
    const back = transition(driverMachine, reach('uninstalling'), failed)[0];
    expect(back.value).toBe('installed');
    expect(back.context.lastError).toEqual({ op: 'uninstall', reason: 'agent on fire' });
    expect(transition(driverMachine, reach('installing'), failed)[0].value).toBe('uninstalled');
  });

  it('asks its driverOp for the operation, with the version the request named', async () => {
    const asked: DriverOpRequest[] = [];
    const actor = createActor(
      driverMachine.provide({
        actors: {
          driverOp: fromPromise<DriverOpOutcome, DriverOpRequest>(async ({ input: req }) => {
            asked.push(req);
            return { installed: true, version: req.version ?? '1.0' };
          }),
        },
      }),
      { input },
    ).start();
    actor.send({ type: 'INSTALL', version: '1.5' });
    expect(actor.getSnapshot().hasTag('busy')).toBe(true);
    await new Promise((r) => setImmediate(r));
    expect(asked).toEqual([{ op: 'install', host: 'compute-1', driver: 'fake', version: '1.5' }]);
    expect(actor.getSnapshot().value).toBe('installed');
    expect(actor.getSnapshot().context.version).toBe('1.5');
  });

  it("reads a driver's own reason from a failure that carries one", () => {
    expect(failureReason(Object.assign(new Error('install of fake failed: disk full'), { details: { reason: 'disk full' } }))).toBe('disk full');
    expect(failureReason(new Error('timed out'))).toBe('timed out');
  });
});
