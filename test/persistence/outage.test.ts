import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PgJournal } from '../../db/pg-journal.js';
import type { Running } from '../../roles/all-in-one.js';
import { svc } from '../services.js';
import { freshDatabase, query } from './helpers.js';
import { PgProxy } from './pg-proxy.js';
import { act, ready, startStack } from './stack.js';
import { eventually } from '../support/eventually.js';

interface Outcome { requestId: string; id: string; status: number; state?: string; code?: string }

describe.skipIf(!svc.postgres)('persistence: the database goes away under load and comes back (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: PgProxy;
  let run: Running;

  beforeAll(async () => {
    db = await freshDatabase('outage');
    proxy = await PgProxy.forUrl(db.url).start();
    run = await startStack({ databaseUrl: proxy.rewrite(db.url), nics: 2, vfsPerNic: 20, gpus: 0, unavailableAfterMs: 1_000 });
    await ready(run, 41);
  });
  afterAll(async () => {
    proxy?.restore();
    await run?.stop();
    await proxy?.stop();
    await db?.drop();
  });

  it('callers get 503 while it is gone, the process stays up, and nothing acknowledged is lost', async () => {
    const ids = run.conductor.listAccelerators().filter((a) => a.deviceType === 'NIC').map((a) => a.id);
    const outcomes: Outcome[] = [];
    let stop = false;
    let seq = 0;
    // One operator per accelerator, toggling it enable/disable as fast as answers come back.
    const workers = ids.map(async (id) => {
      while (!stop) {
        // The live machine decides (a commit answered 503 leaves the committed view behind).
        const allowed = run.conductor.acceleratorActor(id).allowed();
        const action = allowed.includes('ENABLE') ? 'enable' : allowed.includes('DISABLE') ? 'disable' : allowed.includes('RETRY') ? 'retry' : null;
        if (!action) { await new Promise((r) => setTimeout(r, 5)); continue; }
        const requestId = `op-${seq++}`;
        const r = await act(run, id, action, requestId);
        outcomes.push({ requestId, id, status: r.status, state: r.body.state as string | undefined, code: r.body.code as string | undefined });
      }
    });
    const acked = (): number => outcomes.filter((o) => o.status === 200).length;

    await eventually(() => acked() >= 100, { what: '100 acknowledged transitions before the outage' });
    proxy.cut();
    await eventually(() => outcomes.some((o) => o.status === 503), { what: 'a 503 while the database is gone' });
    expect((await run.app.inject({ method: 'GET', url: '/cyborg/v1/accelerators' })).statusCode).toBe(200);
    proxy.restore();
    const afterOutage = acked();
    await eventually(() => acked() >= afterOutage + 100, { what: '100 more acknowledged transitions once it is back' });
    stop = true;
    await Promise.all(workers);
    await eventually(() => (run.journal as PgJournal).pending === 0, { what: 'the queue to drain' });

    const unavailable = outcomes.filter((o) => o.status === 503);
    expect(unavailable.length).toBeGreaterThan(0);
    expect(unavailable.every((o) => o.code === 'persistence.unavailable')).toBe(true);
    expect(outcomes.every((o) => o.status === 200 || o.status === 503 || o.status === 409)).toBe(true);

    // Every acknowledged answer's final state is in the log under its request id.
    const okOnes = outcomes.filter((o) => o.status === 200);
    const rows = await query<{ request_id: string; to: string }>(db.url, 'select request_id, "to" from transition_log where request_id = any($1)', [okOnes.map((o) => o.requestId)]);
    const logged = new Set(rows.map((r) => `${r.request_id}/${r.to}`));
    const lost = okOnes.filter((o) => !logged.has(`${o.requestId}/${o.state}`));
    expect(lost).toEqual([]);

    // The work queued during the outage was written too: the table agrees with the actors.
    const table = new Map((await query<{ id: string; state: string }>(db.url, 'select id, state from accelerators')).map((r) => [r.id, r.state]));
    for (const id of ids) expect(table.get(id), id).toBe(run.conductor.acceleratorActor(id).state);
    // And what the API shows catches up with it, even for an accelerator whose last change was
    // answered 503 and that has not moved since.
    await eventually(() => ids.every((id) => run.conductor.getAccelerator(id).state === table.get(id)), { what: 'the committed views to catch up' });
  });
});
