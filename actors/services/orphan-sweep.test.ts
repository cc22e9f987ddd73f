import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ArqHold } from '../../model/index.js';
import { isOrphan, OrphanSweep, type HeldHandle } from './orphan-sweep.js';

const h = (arqUuid: string, handleUuid = `h-${arqUuid}`): HeldHandle => ({ acceleratorId: 'acc-1', handleUuid, arqUuid });
const bound = (handleUuid: string): ArqHold => ({ state: 'Bound', boundTo: { acceleratorId: 'acc-1', handleUuid } });

describe('isOrphan', () => {
  it('calls a handle orphaned only when the home says its ARQ is gone, holds nothing or holds another', () => {
    expect(isOrphan(h('a'), null)).toBe(true);
    expect(isOrphan(h('a'), { state: 'BindFailed', boundTo: null })).toBe(true);
    expect(isOrphan(h('a'), bound('another-handle'))).toBe(true);
    expect(isOrphan(h('a'), bound('h-a'))).toBe(false);
  });

  it('never on a guess, and never while a bind or a release is under way', () => {
    expect(isOrphan(h('a'), undefined)).toBe(false);
    for (const state of ['BindStarted', 'Unbinding', 'Deleting', 'DeletePending'] as const) expect(isOrphan(h('a'), { state, boundTo: null })).toBe(false);
  });
});

describe('the sweep of orphaned attach handles', () => {
  const setup = (held: HeldHandle[], answer: Record<string, ArqHold | null>) => {
    const released: HeldHandle[] = [];
    const asked: string[][] = [];
    const sweep = new OrphanSweep({
      held: () => held.filter((x) => !released.includes(x)),
      holds: async (uuids) => {
        asked.push([...uuids]);
        return Object.fromEntries(uuids.flatMap((u) => (u in answer ? [[u, answer[u]!]] : [])));
      },
      release: async (x) => {
        released.push(x);
      },
      graceMs: 10_000,
      pageSize: 2,
      log: pino({ level: 'silent' }),
    });
    return { sweep, released, asked };
  };

  it('releases a handle of a gone ARQ only when a second sweep past the grace still finds it', async () => {
    const gone = h('gone');
    const { sweep, released } = setup([gone, h('live')], { gone: null, live: bound('h-live') });
    expect(await sweep.run(0)).toEqual([]);
    expect(await sweep.run(5_000)).toEqual([]);
    expect(await sweep.run(10_000)).toEqual([gone]);
    expect(released).toEqual([gone]);
  });

  it('forgets a suspect that got bound meanwhile, and asks the home in pages', async () => {
    const held = [h('a'), h('b'), h('c')];
    const answer: Record<string, ArqHold | null> = { a: { state: 'Initial', boundTo: null }, b: bound('h-b'), c: bound('h-c') };
    const { sweep, released, asked } = setup(held, answer);
    await sweep.run(0);
    answer.a = bound('h-a');
    await sweep.run(10_000);
    answer.a = { state: 'BindFailed', boundTo: null };
    await sweep.run(20_000);
    expect(released).toEqual([]);
    expect(asked.every((page) => page.length <= 2)).toBe(true);
  });

  it('releases nothing for an ARQ the home did not answer for', async () => {
    const { sweep, released } = setup([h('unknown')], {});
    await sweep.run(0);
    await sweep.run(60_000);
    expect(released).toEqual([]);
  });
});
