import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { acceleratorLogic } from './accelerator-logic.js';

const input = { id: 'acc-1', host: 'compute-1', capacity: 1 };

/** Resolves once `actor` reaches `state`, or rejects after `ms`. */
function reaches(actor: ReturnType<typeof createActor>, state: string, ms = 2_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`never reached ${state}`)), ms);
    const sub = actor.subscribe((s) => {
      if ((s as { value: unknown }).value === state) {
        clearTimeout(timer);
        sub.unsubscribe();
        resolve();
      }
    });
  });
}

describe('the driver-operation effect the conductor provides', () => {
  it("answers with the driver's outcome", async () => {
    const actor = createActor(
      acceleratorLogic(async () => ({ ok: 1 }), 1_000),
      { input },
    ).start();
    actor.send({ type: 'ENABLE' });
    await reaches(actor, 'ready');
  });

  it('answers "timed out" for a driver that never does, and drops its late answer', async () => {
    let late!: (v: Record<string, unknown>) => void;
    const actor = createActor(
      acceleratorLogic(
        () =>
          new Promise((r) => {
            late = r;
          }),
        30,
      ),
      { input },
    ).start();
    actor.send({ type: 'ENABLE' });
    await reaches(actor, 'error');
    expect(actor.getSnapshot().context.error).toEqual({ op: 'install', reason: 'driver operation install timed out' });
    late({});
    // The late answer settles in microtasks: one turn of the event loop is plenty for it to land.
    await new Promise((r) => setImmediate(r));
    expect(actor.getSnapshot().value).toBe('error');
  });

  it("passes a driver's failure on as the reason", async () => {
    const actor = createActor(
      acceleratorLogic(async () => {
        throw new Error('device on fire');
      }, 1_000),
      { input },
    ).start();
    actor.send({ type: 'ENABLE' });
    await reaches(actor, 'error');
    expect(actor.getSnapshot().context.error).toEqual({ op: 'install', reason: 'device on fire' });
  });
});
