import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Change } from '../../actors/runtime/index.js';
import type { TransitionRecord } from '../../model/index.js';
import { migrate, openOrm } from '../../db/config.js';
import { PgJournal } from '../../db/pg-journal.js';
import { svc } from '../services.js';
import { freshDatabase, query } from '../support/database.js';
import { quietLogger } from '../support/log.js';
import { recordOf } from '../support/records.js';

/** One accelerator transition as an actor commits it. */
function step(id: string, to: TransitionRecord['to'], at: string): Change[] {
  return [
    { type: 'accelerator', id, host: 'h1', record: recordOf(to) },
    { type: 'transition', record: { kind: 'accelerator', id, host: 'h1', event: 'E', from: 'inactive', to, at } },
  ];
}

describe.skipIf(!svc.postgres)('persistence: deferred commits (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const open = async (deferMaxMs: number): Promise<PgJournal> => {
    const orm = await openOrm({ url: db.url, pool: 2 });
    await migrate(orm);
    return new PgJournal({ orm, log: quietLogger(), unavailableAfterMs: 10_000, maxBatch: 5_000, deferMaxMs });
  };
  const states = async (): Promise<string[]> =>
    (await query<{ id: string; state: string }>(db.url, 'select id, state from accelerators order by id')).map((r) => `${r.id}:${r.state}`);
  const flushes = async (): Promise<number> =>
    Number((await query<{ n: string }>(db.url, 'select count(distinct flush) as n from transition_log where flush is not null'))[0]!.n);

  beforeAll(async () => {
    db = await freshDatabase('deferred');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('a deferred step rides in the transaction of the next commit that is not deferred, in order', async () => {
    const j = await open(60_000);
    const before = await flushes();
    const steps = [
      j.commit(step('a1', 'attaching', '2026-01-01T00:00:01Z'), { defer: true }),
      j.commit(step('a1', 'attached', '2026-01-01T00:00:02Z'), { defer: true }),
    ];
    expect(j.pending).toBe(2); // queued, nothing started
    await j.commit(step('a2', 'ready', '2026-01-01T00:00:03Z'));
    await Promise.all(steps);
    expect(await states()).toEqual(['a1:attached', 'a2:ready']);
    expect(await flushes()).toBe(before + 1);
    await j.close();
  });

  it('an empty commit (a barrier) writes what is deferred now; close() writes what is left', async () => {
    const j = await open(60_000);
    const deferred = j.commit(step('b1', 'detaching', '2026-01-01T00:00:04Z'), { defer: true });
    await j.commit([]);
    await deferred;
    expect(await states()).toContain('b1:detaching');
    const last = j.commit(step('b1', 'ready', '2026-01-01T00:00:05Z'), { defer: true });
    await j.close();
    await last;
    expect(await states()).toContain('b1:ready');
  });

  it('a deferred step nobody takes along is written on its own within deferMaxMs', async () => {
    const j = await open(50);
    await j.commit(step('c1', 'programming', '2026-01-01T00:00:06Z'), { defer: true });
    expect(await states()).toContain('c1:programming');
    await j.close();
  });
});
