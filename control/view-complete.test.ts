import { describe, expect, it, vi } from 'vitest';
import { quietLogger } from '../test/support/log.js';
import { ViewCompleteness } from './view-complete.js';

/**
 * Issue 39, "a 404 for a device that exists", without the world: a view just replaced stays
 * "incomplete" while a conductor says it is taking hosts over (or does not answer), and a 404 met
 * meanwhile is answered as the view's 503 (api/errors.ts `notYet`); once every conductor says it
 * holds everything, a miss is a 404 again. (The stories: test/faults/restart-orders.test.ts and
 * test/regressions/a-404-for-a-device-that-exists.test.ts.)
 */
describe('the api view after a replacement', () => {
  const settle = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

  it('is incomplete while a takeover is under way or a conductor is silent, complete once all say none', async () => {
    const asked: ((busy: boolean | undefined) => void)[] = [];
    const v = new ViewCompleteness({ takeoverUnderWay: () => new Promise((r) => asked.push(r)), log: quietLogger(), everyMs: 1 });
    const answer = async (busy: boolean | undefined): Promise<void> => {
      await vi.waitFor(() => expect(asked.length).toBeGreaterThan(0));
      asked.shift()!(busy);
      await settle(5);
    };
    expect(v.incomplete).toBe(false);
    v.replaced();
    expect(v.incomplete).toBe(true);
    await answer(true);
    expect(v.incomplete).toBe(true);
    await answer(undefined);
    expect(v.incomplete).toBe(true);
    await answer(false);
    expect(v.incomplete).toBe(false);
  });

  it('gives up after maxMs with a warning: a conductor that never answers does not hide a 404 for good', async () => {
    const v = new ViewCompleteness({ takeoverUnderWay: async () => undefined, log: quietLogger(), everyMs: 5, maxMs: 30 });
    v.replaced();
    await settle(80);
    expect(v.incomplete).toBe(false);
  });
});
