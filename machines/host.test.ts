import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { hostMachine } from './host.js';

function start() {
  const clock = new SimulatedClock();
  const calls: string[] = [];
  const actor = createActor(hostMachine.provide({
    delays: { staleAfter: 1000, lostAfter: 2000 },
    actions: { hostLost: () => void calls.push('lost'), hostReturned: () => void calls.push('returned') },
  }), { input: { host: 'compute-1' }, clock }).start();
  const beat = (seq: number) => actor.send({ type: 'HEARTBEAT', agentId: 'a1', epoch: 1, seq });
  return { clock, calls, actor, beat };
}

describe('host machine', () => {
  it('stays online while heartbeats arrive', () => {
    const { clock, actor, beat } = start();
    for (let i = 1; i <= 5; i++) {
      clock.increment(900);
      beat(i);
    }
    expect(actor.getSnapshot().value).toBe('online');
    expect(actor.getSnapshot().context.lastSeq).toBe(5);
  });

  it('goes stale, then lost, telling its accelerators once', () => {
    const { clock, actor, calls } = start();
    clock.increment(1000);
    expect(actor.getSnapshot().value).toBe('stale');
    clock.increment(1999);
    expect(actor.getSnapshot().value).toBe('stale');
    clock.increment(1);
    expect(actor.getSnapshot().value).toBe('lost');
    expect(calls).toEqual(['lost']);
  });

  it('comes back online from stale silently, and from lost with a return', () => {
    const s = start();
    s.clock.increment(1000);
    s.beat(1);
    expect(s.actor.getSnapshot().value).toBe('online');
    expect(s.calls).toEqual([]);
    s.clock.increment(1000);
    s.clock.increment(2000);
    expect(s.actor.getSnapshot().value).toBe('lost');
    s.actor.send({ type: 'REGISTER', agentId: 'a2', epoch: 2 });
    expect(s.actor.getSnapshot().value).toBe('online');
    expect(s.actor.getSnapshot().context).toMatchObject({ agentId: 'a2', epoch: 2 });
    expect(s.calls).toEqual(['lost', 'returned']);
  });
});
