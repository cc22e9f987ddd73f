import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { bucketDigest, type StateDigest } from '../model/index.js';
import { ReadModel } from './read-model.js';
import { ViewCheck, viewDigest } from './view-check.js';
import type { AcceleratorView } from '../model/index.js';

const acc = (id: string, state: string): AcceleratorView =>
  ({ id, state, rpUuid: `rp-${id}`, generation: 1, updatedAt: '2026-01-01T00:00:00.000Z' }) as unknown as AcceleratorView;
const database = (rows: [string, string][]): StateDigest => ({ accelerators: bucketDigest(rows), arqs: bucketDigest([]) });

function harness(rows: [string, string][]) {
  const model = new ReadModel();
  const resyncs: string[] = [];
  let db = database(rows);
  const check = new ViewCheck({
    fetch: async () => db,
    view: () => model,
    synced: () => true,
    resync: (why) => resyncs.push(why),
    log: pino({ level: 'silent' }),
  });
  return {
    model,
    resyncs,
    check,
    setDb: (r: [string, string][]) => {
      db = database(r);
    },
  };
}

describe("the api's background check of its view against the database", () => {
  it('digests are the same whatever the order of the rows, and differ with one state', () => {
    expect(
      bucketDigest([
        ['a', 'ready'],
        ['b', 'inactive'],
      ]),
    ).toEqual(
      bucketDigest([
        ['b', 'inactive'],
        ['a', 'ready'],
      ]),
    );
    expect(bucketDigest([['a', 'ready']]).buckets).not.toEqual(bucketDigest([['a', 'inactive']]).buckets);
  });

  it('equal: nothing to do', async () => {
    const h = harness([
      ['a1', 'ready'],
      ['a2', 'inactive'],
    ]);
    h.model.putAccelerator(acc('a1', 'ready'));
    h.model.putAccelerator(acc('a2', 'inactive'));
    expect(await h.check.check()).toBe('equal');
    expect(viewDigest(h.model)).toEqual(
      database([
        ['a1', 'ready'],
        ['a2', 'inactive'],
      ]),
    );
  });

  it('a difference a views message is on its way to close is not a reason to rebuild', async () => {
    const h = harness([['a1', 'ready']]);
    h.model.putAccelerator(acc('a1', 'inactive'));
    expect(await h.check.check()).toBe('differs');
    h.model.putAccelerator({ ...acc('a1', 'ready'), generation: 2 });
    expect(await h.check.check()).toBe('equal');
    // Moving: the view changed the differing bucket between two checks.
    h.setDb([['a1', 'programmed']]);
    expect(await h.check.check()).toBe('differs');
    h.model.putAccelerator({ ...acc('a1', 'programming'), generation: 3 });
    expect(await h.check.check()).toBe('differs');
    expect(h.resyncs).toEqual([]);
  });

  it('a difference that stays while the view does not move: the view is rebuilt, once, saying why', async () => {
    const h = harness([
      ['a1', 'ready'],
      ['a2', 'ready'],
    ]);
    h.model.putAccelerator(acc('a1', 'ready')); // a2's views message was lost
    expect(await h.check.check()).toBe('differs');
    expect(await h.check.check()).toBe('resynced');
    expect(h.resyncs).toEqual(['the view differs from the database in 1 of 128 digest buckets (accelerators 1 shown, 2 stored; ARQs 0 shown, 0 stored)']);
    // A fresh start after a rebuild: one more difference is not yet lasting.
    expect(await h.check.check()).toBe('differs');
    // One a rebuild did not close (the conductor's memory and database apart): said, not rebuilt again yet.
    expect(await h.check.check()).toBe('differs');
    expect(h.resyncs).toHaveLength(1);
  });
});
