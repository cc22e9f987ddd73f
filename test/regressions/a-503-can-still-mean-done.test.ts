/**
 * Regression (issue 39, "A 503 can still mean done"): in a 30 s PostgreSQL partition, ARQ creates
 * answered 503 + Retry-After after the api's 10 s wait were committed when it healed. A partition
 * gives no error: the journal never saw the database "unreachable", so nothing was dropped; the
 * api's wait ran out, it answered 503, and everything that had waited was written at the heal.
 *
 * Now a call carries its caller's wait as a deadline (actors/runtime/call-deadline.ts): what waits
 * for the database at the deadline is dropped and answered `persistence.deadline_passed` (503),
 * what comes after it is refused, and the heal writes none of it. The one commit whose statement
 * was already on the wire is not answered 503 (it lands when the partition heals). Real
 * PostgreSQL behind a proxy that blackholes the traffic, as a partition does.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withCallDeadline, type Change } from '../../actors/runtime/index.js';
import type { PgJournal } from '../../db/pg-journal.js';
import type { CyborgError } from '../../errors/index.js';
import { svc } from '../services.js';
import { BlackholeProxy } from '../support/blackhole-proxy.js';
import { freshDatabase, openTestJournal, query } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { acceleratorStep } from '../support/records.js';

describe.skipIf(!svc.postgres)('a 503 can still mean done (PostgreSQL partition)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: BlackholeProxy;
  let journal: PgJournal;

  beforeEach(async () => {
    db = await freshDatabase('regr_503_done');
    proxy = await BlackholeProxy.forUrl(db.url).start();
    journal = await openTestJournal(proxy.rewrite(db.url), { pool: 1, closeTimeoutMs: 500 });
  });
  afterEach(async () => {
    proxy.heal();
    await journal?.close().catch(() => undefined);
    await proxy?.stop();
    await db?.drop();
  });

  const outcome = (p: Promise<void>): Promise<string> =>
    p.then(
      () => 'ok',
      (e: unknown) => (e as CyborgError).code,
    );
  /** A commit made for a call whose caller waits `ms`. */
  const forCall = (ms: number, changes: Change[]): Promise<string> => outcome(withCallDeadline(Date.now() + ms, () => journal.commit(changes)));
  const inDatabase = async (): Promise<string[]> => (await query<{ id: string }>(db.url, 'select id from accelerators order by id')).map((r) => r.id);

  it('what waited at its deadline is answered 503 and is not in the database after the heal', async () => {
    expect(await forCall(2_000, acceleratorStep('before', 1))).toBe('ok');
    proxy.partition();
    // The first goes on the wire and hangs; the others wait behind it for the database.
    const onTheWire = forCall(600, acceleratorStep('on-the-wire', 1));
    await new Promise((r) => setTimeout(r, 50));
    const waiting = [forCall(600, acceleratorStep('waiting-1', 1)), forCall(600, acceleratorStep('waiting-2', 1))];
    // Built on a change that will be left out (same record, no deadline of its own): left out with it.
    const builtOn = outcome(journal.commit(acceleratorStep('waiting-1', 2)));
    expect(await Promise.all(waiting)).toEqual(['persistence.deadline_passed', 'persistence.deadline_passed']);
    expect(await builtOn).toBe('persistence.deadline_passed');
    // A commit the call makes once its deadline has passed is refused at once.
    expect(await outcome(withCallDeadline(Date.now() - 1, () => journal.commit(acceleratorStep('late', 1))))).toBe('persistence.deadline_passed');
    expect(journal.stats.deadlinePassed).toBe(4);

    await new Promise((r) => setTimeout(r, 1_000));
    proxy.heal();
    // The one on the wire may have landed: it is never answered 503; the heal delivers it.
    expect(await onTheWire).toBe('ok');
    await eventually(async () => (await outcome(journal.commit(acceleratorStep('after', 1)))) === 'ok', { what: 'the journal writing again' });
    expect(await inDatabase()).toEqual(['after', 'before', 'on-the-wire']);
  });

  it('a commit that lands before its deadline is answered done, and a call answered in time is not cut short afterwards', async () => {
    let deferred: Promise<string> | undefined;
    expect(
      await outcome(
        withCallDeadline(Date.now() + 300, async () => {
          await journal.commit(acceleratorStep('in-time', 1));
          // A step the call does not wait for (a deferred one): once the call is answered, its deadline no longer applies.
          deferred = outcome(journal.commit(acceleratorStep('in-time', 2), { defer: true }));
        }),
      ),
    ).toBe('ok');
    await new Promise((r) => setTimeout(r, 500));
    expect(await outcome(journal.commit([]))).toBe('ok');
    expect(await deferred).toBe('ok');
    expect(journal.stats.deadlinePassed).toBe(0);
    expect(await inDatabase()).toEqual(['in-time']);
  });
});
