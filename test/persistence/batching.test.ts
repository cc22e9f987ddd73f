import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Change } from '../../actors/runtime/index.js';
import type { TransitionRecord } from '../../model/index.js';
import type { PgJournal } from '../../db/pg-journal.js';
import { svc } from '../services.js';
import { freshDatabase, openTestJournal, query } from '../support/database.js';
import { PgProxy } from './pg-proxy.js';
import { recordOf } from '../support/records.js';

/** The two changes an accelerator actor commits per transition. */
function transition(id: string, n: number): Change[] {
  // Names of the test's own: the journal stores a state as it is given (as the database reads it back).
  const from = (n === 0 ? 'inactive' : `s${n - 1}`) as TransitionRecord['from'];
  const to = `s${n}` as TransitionRecord['to'];
  return [
    { type: 'accelerator', id, host: 'h1', record: recordOf(to, { id, n }) },
    { type: 'transition', record: { kind: 'accelerator', id, host: 'h1', event: 'STEP', from, to, at: new Date().toISOString(), requestId: `${id}-${n}` } },
  ];
}

describe.skipIf(!svc.postgres)('persistence: group commit (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: PgProxy;
  let journal: PgJournal;

  beforeAll(async () => {
    db = await freshDatabase('batching');
    proxy = await PgProxy.forUrl(db.url).start();
    journal = await openTestJournal(proxy.rewrite(db.url), { pool: 1 });
  });
  afterAll(async () => {
    await journal?.close();
    await proxy?.stop();
    await db?.drop();
  });

  it('an idle system commits one transition with one statement', async () => {
    const before = proxy.statements;
    await journal.commit(transition('idle', 0));
    // The accelerator upsert and the log insert, as one statement (data-modifying CTEs).
    expect(proxy.statements - before).toBe(1);
  });

  it('2,000 concurrent transitions of 100 accelerators take far fewer statements, and the log keeps every one', async () => {
    const ids = Array.from({ length: 100 }, (_, i) => `acc-${String(i).padStart(3, '0')}`);
    const before = { wire: proxy.statements, flushes: journal.stats.flushes };
    const commits: Promise<void>[] = [];
    for (let n = 0; n < 20; n++) for (const id of ids) commits.push(journal.commit(transition(id, n)));
    await Promise.all(commits);
    const statements = proxy.statements - before.wire;
    const flushes = journal.stats.flushes - before.flushes;
    console.log(`2000 transitions: ${statements} statements on the wire in ${flushes} flushes`);
    expect(statements).toBeLessThan(2_000 / 10);
    expect(flushes).toBeLessThan(2_000 / 10);

    const accs = await query<{ id: string; state: string }>(db.url, `select id, state from accelerators where id like 'acc-%' order by id`);
    expect(accs).toEqual(ids.map((id) => ({ id, state: 's19' })));
    const log = await query<{ id: string; to: string }>(db.url, `select id, "to" from transition_log where id like 'acc-%' order by seq`);
    expect(log).toHaveLength(2_000);
    for (const id of ids) {
      expect(log.filter((r) => r.id === id).map((r) => r.to)).toEqual(Array.from({ length: 20 }, (_, n) => `s${n}`));
    }
  });

  it('several transitions of one accelerator in one flush become one row write', async () => {
    const before = proxy.statements;
    const commits = Array.from({ length: 50 }, (_, n) => journal.commit(transition('hot', n)));
    await Promise.all(commits);
    // The first commit starts a flush at once; the 49 queued meanwhile share the next one, whose
    // single upsert writes the row once (PostgreSQL refuses one upsert touching a row twice).
    expect(proxy.statements - before).toBeLessThanOrEqual(2);
    const [row] = await query<{ state: string }>(db.url, `select state from accelerators where id = 'hot'`);
    expect(row!.state).toBe('s49');
    expect((await journal.history('hot', 100)).map((h) => h.to)).toEqual(Array.from({ length: 50 }, (_, n) => `s${n}`));
  });
});
