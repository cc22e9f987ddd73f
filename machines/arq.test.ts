import { describe, expect, it } from 'vitest';
import { getShortestPaths } from '@xstate/graph';
import { transition, type SnapshotFrom } from 'xstate';
import { arqMachine, cyborgState, type ArqEvent } from './arq.js';

type Snap = SnapshotFrom<typeof arqMachine>;

const input = { uuid: 'arq-1', deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' };
const bind: ArqEvent = { type: 'BIND', hostname: 'compute-1', deviceRpUuid: 'rp-1', instanceUuid: 'vm-1' };
const bound = { type: 'xstate.done.actor.bind', output: { acceleratorId: 'acc-1', handleUuid: 'h-1' } } as unknown as ArqEvent;
const bindFailed = { type: 'xstate.error.actor.bind', error: new Error('no free handle') } as unknown as ArqEvent;
const unbound = { type: 'xstate.done.actor.unbind', output: undefined } as unknown as ArqEvent;
const unbindFailed = { type: 'xstate.error.actor.unbind', error: new Error('agent gone') } as unknown as ArqEvent;
const events: ArqEvent[] = [bind, { type: 'UNBIND' }, { type: 'DELETE' }, { type: 'RETRY' }, bound, bindFailed, unbound, unbindFailed];

const paths = getShortestPaths(arqMachine, { input, events, serializeState: ((s: Snap) => `${String(s.value)}|${s.context.error ?? ''}`) as never });
const snaps = paths.map((p) => p.state as Snap);
const reach = (v: string): Snap => {
  const s = snaps.find((x) => x.value === v);
  if (!s) throw new Error(`${v} not reachable`);
  return s;
};

describe('ARQ machine', () => {
  it('reaches every state it declares', () => {
    expect([...new Set(snaps.map((s) => String(s.value)))].sort()).toEqual(Object.keys(arqMachine.root.states).sort());
  });

  const table: Record<string, Partial<Record<ArqEvent['type'], string>>> = {
    Initial: { BIND: 'BindStarted', DELETE: 'Deleting' },
    BindStarted: {},
    Bound: { UNBIND: 'Unbinding', DELETE: 'Deleting' },
    BindFailed: { UNBIND: 'Unbinding', DELETE: 'Deleting' },
    Unbinding: {},
    Unbound: { BIND: 'BindStarted', DELETE: 'Deleting' },
    UnbindFailed: { UNBIND: 'Unbinding', DELETE: 'Deleting' },
    Deleting: {},
    DeletePending: { DELETE: 'Deleting', RETRY: 'Deleting' },
    Deleted: {},
  };
  for (const [state, allowed] of Object.entries(table)) {
    for (const type of ['BIND', 'UNBIND', 'DELETE', 'RETRY'] as const) {
      const target = allowed[type];
      it(`${state} ${target ? `--${type}--> ${target}` : `refuses ${type}`}`, () => {
        const s = reach(state);
        const ev = events.find((e) => e.type === type)!;
        expect(s.can(ev)).toBe(Boolean(target));
        if (target) expect(transition(arqMachine, s, ev)[0].value).toBe(target);
      });
    }
  }

  it('records where it is bound, and forgets it on unbind (project kept)', () => {
    const b = transition(arqMachine, transition(arqMachine, reach('Initial'), bind)[0], bound)[0];
    expect(b.value).toBe('Bound');
    expect(b.context.binding).toMatchObject({ hostname: 'compute-1', deviceRpUuid: 'rp-1', instanceUuid: 'vm-1' });
    expect(b.context.boundTo).toEqual({ acceleratorId: 'acc-1', handleUuid: 'h-1' });
    const u = transition(arqMachine, transition(arqMachine, b, { type: 'UNBIND' })[0], unbound)[0];
    expect(u.value).toBe('Unbound');
    expect(u.context.binding).toBeNull();
    expect(u.context.projectId).toBe('p1');
  });

  it('keeps the reason of a failed bind, and resolves (for Nova) on Bound, BindFailed and Deleting', () => {
    const f = transition(arqMachine, reach('BindStarted'), bindFailed)[0];
    expect(f.value).toBe('BindFailed');
    expect(f.context.error).toBe('no free handle');
    expect(f.hasTag('resolved')).toBe(true);
    expect(reach('Bound').hasTag('resolved')).toBe(true);
    expect(reach('Deleting').hasTag('resolved')).toBe(true);
    expect(reach('BindStarted').hasTag('resolved')).toBe(false);
  });

  it('keeps an acknowledged delete: a release that fails waits in DeletePending for a retry, never goes back', () => {
    const pending = transition(arqMachine, transition(arqMachine, reach('Bound'), { type: 'DELETE' })[0], unbindFailed)[0];
    expect(pending.value).toBe('DeletePending');
    expect(pending.context.error).toBe('agent gone');
    expect(pending.context.boundTo).toEqual({ acceleratorId: 'acc-1', handleUuid: 'h-1' });
    expect(pending.can(bind)).toBe(false);
    expect(pending.can({ type: 'UNBIND' })).toBe(false);
    const again = transition(arqMachine, pending, { type: 'RETRY' })[0];
    expect(again.value).toBe('Deleting');
    expect(transition(arqMachine, again, unbound)[0].value).toBe('Deleted');
  });

  it('a release from a dead card makes a bound ARQ a failed bind Nova can delete by instance; nothing else takes RELEASED', () => {
    const released: ArqEvent = { type: 'RELEASED', reason: 'card dead; released by admin' };
    const f = transition(arqMachine, reach('Bound'), released)[0];
    expect(f.value).toBe('BindFailed');
    expect(f.context.boundTo).toBeNull();
    expect(f.context.binding).toMatchObject({ instanceUuid: 'vm-1' });
    expect(f.context.error).toBe('released: card dead; released by admin');
    expect(f.hasTag('resolved')).toBe(true);
    expect(transition(arqMachine, f, { type: 'DELETE' })[0].value).toBe('Deleting');
    for (const state of Object.keys(arqMachine.root.states).filter((x) => x !== 'Bound' && x !== 'Deleted'))
      expect(reach(state).can(released), state).toBe(false);
  });

  it("shows Cyborg's state names to Cyborg clients", () => {
    expect(cyborgState('Unbinding')).toBe('Bound');
    expect(cyborgState('DeletePending')).toBe('Deleting');
    expect(cyborgState('BindFailed')).toBe('BindFailed');
  });
});
