import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Change } from '../../actors/runtime/index.js';
import type { TransitionRecord } from '../../model/index.js';
import type { PgJournal } from '../../db/pg-journal.js';
import { CyborgError } from '../../errors/index.js';
import { svc } from '../services.js';
import { freshDatabase, openTestJournal, query } from '../support/database.js';
import { recordOf } from '../support/records.js';

/** The two changes an accelerator actor commits per transition; `to` any string (the journal's bounds are under test). */
function transition(id: string, to: string, at = new Date().toISOString(), host = 'h1'): Change[] {
  return [
    { type: 'accelerator', id, host, record: recordOf(to, { id }) },
    {
      type: 'transition',
      record: { kind: 'accelerator', id, host, event: 'STEP', from: 'inactive', to: to as TransitionRecord['to'], at, requestId: `${id}-${to.length}` },
    },
  ];
}

/** What a commit's promise came to: 'ok', or the CyborgError code it was refused with. */
function outcome(p: Promise<void>): Promise<string> {
  return p.then(
    () => 'ok',
    (err: unknown) => (err instanceof CyborgError ? err.code : `untyped: ${String(err)}`),
  );
}

describe.skipIf(!svc.postgres)('persistence: a poisoned change fails alone, and the journal keeps going (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let journal: PgJournal;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason);
  };

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    db = await freshDatabase('poison');
    journal = await openTestJournal(db.url);
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await journal?.close();
    await db?.drop();
  });

  it('an agent reports a NUL in its host name, another an over-long state: those two are refused with 400, the batch around them commits', async () => {
    const good = Array.from({ length: 30 }, (_, i) => `good-${i}`);
    const commits = [
      ...good.slice(0, 15).map((id) => journal.commit(transition(id, 'enabled'))),
      // What one NATS inventory message did before: PostgreSQL text cannot hold NUL.
      journal.commit([{ type: 'inventory', host: 'compute-1\u0000', devices: [] }]),
      journal.commit(transition('nul-host', 'enabled', undefined, 'compute\u0000evil')),
      journal.commit(transition('long-state', 'x'.repeat(256))),
      journal.commit(transition('lone-surrogate', 'enabled', undefined, 'compute-\ud800')),
      ...good.slice(15).map((id) => journal.commit(transition(id, 'enabled'))),
    ];
    const outcomes = await Promise.all(commits.map(outcome));
    expect(outcomes.slice(0, 15)).toEqual(Array(15).fill('ok'));
    expect(outcomes.slice(15, 19)).toEqual(Array(4).fill('persistence.invalid_value'));
    expect(outcomes.slice(19)).toEqual(Array(15).fill('ok'));

    const rows = await query<{ id: string }>(db.url, `select id from accelerators where id like 'good-%'`);
    expect(rows.map((r) => r.id).sort()).toEqual([...good].sort());
    expect(await query(db.url, `select id from accelerators where id in ('nul-host', 'long-state', 'lone-surrogate')`)).toEqual([]);

    // The 400 says which value, so the caller can tell what to fix.
    const refused = await journal.commit(transition('long-state', 'y'.repeat(300))).catch((e: unknown) => e as CyborgError);
    expect(refused).toBeInstanceOf(CyborgError);
    expect(refused!.status).toBe(400);
    expect(refused!.details.field).toBe('accelerator state');
    // A name of 255 characters made of astral-plane emoji is 510 UTF-16 units and still fits.
    await journal.commit(transition('emoji', '\u{1F600}'.repeat(255)));
  });

  it('a batch the database refuses for one row (a time out of its range) is split: that commit fails with 422, every other one commits, and later writes work', async () => {
    const before = journal.stats.flushes;
    const ids = Array.from({ length: 40 }, (_, i) => `batch-${i}`);
    // JavaScript takes this time, PostgreSQL's timestamptz does not (SQLSTATE class 22).
    const commits = ids.map((id, i) => journal.commit(transition(id, 'enabled', i === 23 ? '+200000-01-01T00:00:00.000Z' : undefined)));
    const outcomes = await Promise.all(commits.map(outcome));
    expect(outcomes.filter((o) => o !== 'ok')).toEqual(['persistence.refused']);
    expect(outcomes[23]).toBe('persistence.refused');
    const err = await commits[23]!.catch((e: unknown) => e as CyborgError);
    expect(err!.status).toBe(422);
    expect(String(err!.details.sqlState)).toMatch(/^22/);

    const rows = await query<{ id: string }>(db.url, `select id from accelerators where id like 'batch-%'`);
    expect(rows.map((r) => r.id).sort()).toEqual(ids.filter((_, i) => i !== 23).sort());
    const log = await query<{ id: string }>(db.url, `select id from transition_log where id like 'batch-%'`);
    expect(log).toHaveLength(39);

    // Not retried forever: the journal is idle again, and the next write commits at once.
    expect(journal.pending).toBe(0);
    await journal.commit(transition('after', 'enabled'));
    expect(await query(db.url, `select id from accelerators where id = 'after'`)).toHaveLength(1);
    expect(journal.stats.flushes).toBeGreaterThan(before);
    expect(unhandled).toEqual([]);
  });
});
