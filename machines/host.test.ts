import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { hostMachine } from './host.js';

function start() {
  const clock = new SimulatedClock();
  const calls: string[] = [];
  const actor = createActor(
    hostMachine.provide({
      delays: { untilStale: 1000, lostAfter: 2000 },
      actions: { hostLost: () => void calls.push('lost'), hostReturned: () => void calls.push('returned') },
    }),
    { input: { host: 'compute-1' }, clock },
  ).start();
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

describe('host machine with beats kept by its actor', () => {
  it('re-arms for the time left while beats were noted, and goes stale staleAfter after the last one', () => {
    const clock = new SimulatedClock();
    const staleAfter = 1000;
    let lastBeat = 0;
    const actor = createActor(
      hostMachine.provide({
        delays: { untilStale: () => Math.max(1, lastBeat + staleAfter - clock.now()), lostAfter: 2000 },
        guards: { quiet: () => clock.now() - lastBeat >= staleAfter },
      }),
      { input: { host: 'compute-1' }, clock },
    ).start();
    // Beats noted by the actor only (no event to the machine): at 400 ms and 900 ms.
    clock.increment(400);
    lastBeat = clock.now();
    clock.increment(500);
    lastBeat = clock.now();
    clock.increment(100); // the first timer (1000 ms) fires: a beat came, so it re-arms for 900 ms
    expect(actor.getSnapshot().value).toBe('online');
    clock.increment(899);
    expect(actor.getSnapshot().value).toBe('online');
    clock.increment(1); // 1900 ms: 1000 ms after the last beat
    expect(actor.getSnapshot().value).toBe('stale');
  });
});
