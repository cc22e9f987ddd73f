import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Change } from '../../actors/runtime/index.js';
import type { PgJournal } from '../../db/pg-journal.js';
import { svc } from '../services.js';
import { freshDatabase, openTestJournal, query } from '../support/database.js';
import { PgProxy } from './pg-proxy.js';
import { eventually } from '../support/eventually.js';
import { acceleratorStep } from '../support/records.js';

/** `n` of each log row of the accelerators whose id starts with `prefix`, oldest first. */
async function logOrder(url: string, prefix: string): Promise<number[]> {
  const rows = await query<{ request_id: string }>(url, `select request_id from transition_log where id like $1 order by seq`, [`${prefix}%`]);
  return rows.map((r) => Number(r.request_id.split('/')[1]));
}

describe.skipIf(!svc.postgres)('persistence: pipelined flushes keep commit order (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: PgProxy;
  let journal: PgJournal | undefined;

  beforeAll(async () => {
    db = await freshDatabase('pipeline');
    proxy = await PgProxy.forUrl(db.url).start();
  });
  afterEach(async () => {
    proxy.releaseCommit();
    proxy.release();
    proxy.restore();
    await journal?.close();
    journal = undefined;
  });
  afterAll(async () => {
    await proxy?.stop();
    await db?.drop();
  });

  // A pool of 3: two flushes open at once (the default pipeline) and one connection to spare.
  const open = async (): Promise<PgJournal> => (journal = await openTestJournal(proxy.rewrite(db.url), { pool: 3 }));

  /** What the journal's backends on the test database are doing, idle ones left out. */
  const backends = (): Promise<{ state: string; waiting: string | null }[]> =>
    query(
      db.url,
      `select state, wait_event_type as waiting from pg_stat_activity
      where datname = $1 and backend_type = 'client backend' and pid <> pg_backend_pid() and state <> 'idle'`,
      [db.name],
    );

  const rows = (ids: string[]): Promise<{ id: string; state: string }[]> =>
    query(db.url, 'select id, state from accelerators where id = any($1) order by id', [ids]);

  /**
   * Flight A (accelerator `${p}x` to s1) runs its statement and sends its COMMIT, which the proxy
   * keeps from the server: A stays open, holding its row lock. Flight B (`later`) is committed
   * next and sends its statement on another connection; `bReady` says when B is where the test
   * wants it.
   */
  async function aHeldThenB(
    j: PgJournal,
    p: string,
    later: Change[],
    bReady: (b: { state: string; waiting: string | null }[]) => boolean,
  ): Promise<{ a: Promise<void>; b: Promise<void>; answered: string[] }> {
    const answered: string[] = [];
    // An idle journal writes its first flush as one statement; a commit queued while that flush
    // runs is written on the pipelined path (BEGIN, statement, COMMIT).
    proxy.stallNextCommit();
    const warm = j.commit(acceleratorStep(`${p}w`, 0));
    const a = j.commit(acceleratorStep(`${p}x`, 1)).then(() => {
      answered.push('a');
    });
    await warm;
    await eventually(() => proxy.stalledCommits === 1, { what: 'flight A to have run its statement and sent its COMMIT' });
    const b = j.commit(later).then(() => {
      answered.push('b');
    });
    await eventually(async () => bReady(await backends()), { what: 'flight B to be open beside A' });
    return { a, b, answered };
  }
  const bothRan = (now: { state: string }[]): boolean => now.length === 2 && now.every((x) => x.state === 'idle in transaction');

  /** A, then B, are answered, and the rows and the log hold what they wrote, in commit order. */
  async function writtenInOrder(p: string, held: { a: Promise<void>; b: Promise<void>; answered: string[] }, xState: string, log: number[]): Promise<void> {
    await Promise.all([held.a, held.b]);
    expect(held.answered).toEqual(['a', 'b']);
    expect(await rows([`${p}x`, `${p}y`])).toEqual([
      { id: `${p}x`, state: xState },
      { id: `${p}y`, state: 's2' },
    ]);
    expect(await logOrder(db.url, p)).toEqual(log);
  }

  it("an operator's many concurrent changes to the same accelerators end with the last one in each row and the log in commit order", async () => {
    const j = await open();
    const ids = Array.from({ length: 10 }, (_, i) => `same-${i}`);
    const lastOf = new Map<string, number>();
    const acks: number[] = [];
    let next = 0;
    // 100 callers, each committing 30 transitions of the SAME ten accelerators and waiting for
    // each ack before the next: a busy journal, so its flushes run pipelined.
    await Promise.all(
      Array.from({ length: 100 }, async (_, caller) => {
        for (let i = 0; i < 30; i++) {
          const id = ids[(caller + i) % ids.length]!;
          const n = next++;
          lastOf.set(id, n);
          await j.commit(acceleratorStep(id, n));
          acks.push(n);
        }
      }),
    );
    expect(j.stats.pipelined).toBeGreaterThan(0);

    const all = Array.from({ length: 3_000 }, (_, n) => n);
    expect(acks).toEqual(all); // acknowledged in commit order
    const stored = await query<{ id: string; context: { n: number } }>(db.url, `select id, context from accelerators where id like 'same-%' order by id`);
    expect(stored.map((r) => [r.id, r.context.n])).toEqual(ids.map((id) => [id, lastOf.get(id)]));
    expect(await logOrder(db.url, 'same-')).toEqual(all);
  });

  it('a later flush that has already run is neither visible nor acknowledged before the earlier one commits', async () => {
    const j = await open();
    const held = await aHeldThenB(j, 'held-', acceleratorStep('held-y', 2), bothRan);

    // Two transactions are open at once; B's COMMIT waits for A's, and nobody hears back.
    expect(held.answered).toEqual([]);
    expect(await rows(['held-x', 'held-y'])).toEqual([]);

    proxy.releaseCommit();
    await writtenInOrder('held-', held, 's1', [0, 1, 2]);
  });

  it('a later flush writing the same accelerator waits in PostgreSQL behind the earlier one, and its record wins', async () => {
    const j = await open();
    const waitsOnA = (now: { state: string; waiting: string | null }[]): boolean =>
      now.length === 2 && now.some((x) => x.state === 'idle in transaction') && now.some((x) => x.state === 'active' && x.waiting === 'Lock');
    const held = await aHeldThenB(j, 'lock-', [...acceleratorStep('lock-x', 2), ...acceleratorStep('lock-y', 2)], waitsOnA);
    expect(held.answered).toEqual([]);

    proxy.releaseCommit();
    await writtenInOrder('lock-', held, 's2', [0, 1, 2, 2]);
  });

  it("the earlier flush's connection dies while the later one is open: the later one is rolled back and both are written again, in order", async () => {
    const j = await open();
    const held = await aHeldThenB(j, 'redo-', acceleratorStep('redo-y', 2), bothRan);

    // Only A's connection goes; B's is fine and ran its statement, but must not commit ahead of A.
    proxy.cutStalled();
    await writtenInOrder('redo-', held, 's1', [0, 1, 2]);
  });

  it('the database is cut while two flushes are open: nothing is acknowledged until it is back, then everything is written once, in order', async () => {
    const j = await open();
    const held = await aHeldThenB(j, 'cut-', acceleratorStep('cut-y', 2), bothRan);

    // The stalled COMMIT never reached the server: both transactions die with their connections.
    proxy.cut();
    await eventually(() => j.stats.retries > 0, { what: 'the journal to retry against the missing database' });
    expect(held.answered).toEqual([]);
    expect(await rows(['cut-x', 'cut-y'])).toEqual([]);

    proxy.restore();
    await writtenInOrder('cut-', held, 's1', [0, 1, 2]);
    await eventually(() => j.pending === 0, { what: 'nothing left in flight' });
  });

  it('a flush whose COMMIT answer is lost is found committed when retried, and logged once', async () => {
    const j = await open();
    await j.commit(acceleratorStep('lostx', 0));
    // Idle again, so the next flush goes as one statement (autocommit) rather than pipelined.
    await eventually(() => j.pending === 0, { what: 'the journal to be idle' });
    // The server runs and commits the flush, but its answer never reaches the journal.
    proxy.hold();
    const lost = j.commit(acceleratorStep('losty', 1));
    await eventually(async () => (await query(db.url, `select 1 from transition_log where id = 'losty'`)).length === 1, {
      what: 'the flush to commit on the server',
    });
    proxy.cut();
    proxy.release();
    proxy.restore();
    await lost;
    expect(await query(db.url, `select request_id from transition_log where id = 'losty'`)).toEqual([{ request_id: 'losty/1' }]);
    // And the journal goes on as before.
    await j.commit(acceleratorStep('losty', 2));
    expect(await logOrder(db.url, 'losty')).toEqual([1, 2]);
  });
});
