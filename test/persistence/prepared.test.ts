import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PgJournal } from '../../db/pg-journal.js';
import { svc } from '../services.js';
import { freshDatabase, openTestJournal, query } from '../support/database.js';
import { acceleratorStep } from '../support/records.js';

/** Ends every session of the journal's database but the caller's, as a DBA or a failover does. */
async function terminateSessions(url: string, name: string): Promise<number> {
  const rows = await query<{ ended: boolean }>(
    url,
    'select pg_terminate_backend(pid) as ended from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
    [name],
  );
  return rows.filter((r) => r.ended).length;
}

/**
 * The journal's statements are named prepared statements, which live as long as the server's
 * session. A session the server ends (pg_terminate_backend, a restart, a failover) takes them
 * with it: the journal's next connection must prepare them again, and nothing acknowledged may
 * be missing.
 */
describe.skipIf(!svc.postgres)('persistence: named statements outlive the sessions that prepared them (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let journal: PgJournal | undefined;

  beforeAll(async () => {
    db = await freshDatabase('prepared');
  });
  afterEach(async () => {
    await journal?.close();
    journal = undefined;
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('after every session is terminated, commits go on, alone and pipelined, and all of them are in the log', async () => {
    journal = await openTestJournal(db.url, { pool: 3 });
    // Alone (one at a time) and busy (many at once, pipelined): both paths prepare their shapes.
    for (let n = 0; n < 5; n++) await journal.commit(acceleratorStep('prep-a', n));
    await Promise.all(Array.from({ length: 50 }, (_, n) => journal!.commit(acceleratorStep(`prep-b${n}`, 0))));

    expect(await terminateSessions(db.url, db.name)).toBeGreaterThan(0);

    for (let n = 5; n < 10; n++) await journal.commit(acceleratorStep('prep-a', n));
    await Promise.all(Array.from({ length: 50 }, (_, n) => journal!.commit(acceleratorStep(`prep-b${n}`, 1))));

    const a = await query<{ n: string }>(db.url, "select count(*) as n from transition_log where id = 'prep-a'");
    const b = await query<{ n: string }>(db.url, "select count(*) as n from transition_log where id like 'prep-b%'");
    expect(Number(a[0]!.n)).toBe(10);
    expect(Number(b[0]!.n)).toBe(100);
    const states = await query<{ state: string }>(db.url, "select state from accelerators where id = 'prep-a'");
    expect(states).toEqual([{ state: 's9' }]);
  });
});
