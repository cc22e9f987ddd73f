import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock } from 'xstate';
import { placementSyncMachine, type PassResult, type SyncWork } from './placement-sync.js';

/** A pass the test resolves by hand, recording what each pass was asked to do. */
function harness(opts: { interval?: number } = {}) {
  const passes: SyncWork[] = [];
  let finish: ((r: PassResult | Error) => void) | null = null;
  const machine = placementSyncMachine.provide({
    actors: {
      pass: fromPromise<PassResult, SyncWork>(({ input }) => {
        passes.push(input);
        return new Promise((resolve, reject) => {
          finish = (r) => (r instanceof Error ? reject(r) : resolve(r));
        });
      }),
    },
    delays: { interval: opts.interval ?? 60_000 },
  });
  const clock = new SimulatedClock();
  const actor = createActor(machine, { clock });
  actor.start();
  const settle = async (r: PassResult | Error): Promise<void> => {
    const f = finish;
    finish = null;
    f?.(r);
    await new Promise((res) => setImmediate(res));
  };
  const loop = (): string => (actor.getSnapshot().value as { loop: string }).loop;
  return { actor, clock, passes, settle, loop };
}

describe('placement sync loop', () => {
  it('starts with a full pass, then waits', async () => {
    const h = harness();
    expect(h.passes).toEqual([{ full: true, ids: [] }]);
    await h.settle({ retry: false });
    expect(h.loop()).toBe('idle');
  });

  it('merges changes that arrive during a pass into the next one', async () => {
    const h = harness();
    h.actor.send({ type: 'CHANGED', ids: ['a'] });
    h.actor.send({ type: 'CHANGED', ids: ['b', 'a'] });
    await h.settle({ retry: false });
    expect(h.passes[1]).toEqual({ full: false, ids: ['a', 'b'] });
    await h.settle({ retry: false });
    expect(h.loop()).toBe('idle');
    expect(h.passes).toHaveLength(2);
  });

  it('backs off after a failure and redoes the work in full', async () => {
    const h = harness();
    await h.settle({ retry: false });
    h.actor.send({ type: 'CHANGED', ids: ['x'] });
    await h.settle(new Error('Placement unavailable'));
    expect(h.loop()).toBe('backoff');
    expect(h.actor.getSnapshot().context.lastError).toBe('Placement unavailable');
    h.actor.send({ type: 'CHANGED', ids: ['y'] });
    expect(h.passes).toHaveLength(2); // no hammering while backing off
    h.clock.increment(500);
    expect(h.passes[2]).toEqual({ full: true, ids: ['x', 'y'] });
  });

  it('grows the backoff while passes keep asking for a retry, and resets it on success', async () => {
    const h = harness();
    await h.settle({ retry: true, reason: 'root missing' });
    h.clock.increment(500);
    await h.settle({ retry: true });
    h.clock.increment(500);
    expect(h.passes).toHaveLength(2); // second backoff is 1000 ms
    h.clock.increment(500);
    expect(h.passes).toHaveLength(3);
    await h.settle({ retry: false });
    expect(h.actor.getSnapshot().context.failures).toBe(0);
  });

  it('keeps the backoff short while retried passes make progress (a converge under way against 409s), and grows it once they stop', async () => {
    const h = harness();
    for (let i = 0; i < 4; i++) {
      await h.settle({ retry: true, reason: 'concurrent_update', progressed: true });
      expect(h.actor.getSnapshot().context.failures).toBe(1);
      h.clock.increment(500);
      expect(h.passes).toHaveLength(i + 2); // always the first backoff, 500 ms
    }
    await h.settle({ retry: true, reason: 'concurrent_update' });
    h.clock.increment(500);
    expect(h.passes).toHaveLength(5); // no progress: 1000 ms now
    h.clock.increment(500);
    expect(h.passes).toHaveLength(6);
  });

  it('asks for a full pass on every interval', async () => {
    const h = harness({ interval: 1000 });
    await h.settle({ retry: false });
    h.clock.increment(1000);
    expect(h.passes[1]).toEqual({ full: true, ids: [] });
  });
});
