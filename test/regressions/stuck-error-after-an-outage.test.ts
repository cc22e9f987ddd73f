/**
 * Regression (issue 39, "A stuck error after an outage"): a disable in flight when PostgreSQL
 * stopped left its accelerator in `error` until someone retried. The uninstall outlasted the
 * journal's `deferMaxMs`, so `uninstalling` was written alone; the driver finished, the commit of
 * `inactive` was answered 503, and the accelerator went back to its committed step — a transient
 * one, which comes back as `error` (interrupted), as after a crash.
 *
 * Now the outcome of an operation whose start the database holds is written whenever the database
 * answers again (`CommitOptions.untilWritten`): the API shows the committed step, busy, while the
 * database is away, and the card ends `inactive` once it is back. Real PostgreSQL, cut by a proxy
 * (test/persistence/pg-proxy.ts), the all-in-one role with a fake driver that takes 1.5 s an operation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../roles/all-in-one.js';
import { svc } from '../services.js';
import { freshDatabase, query } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { PgProxy } from '../persistence/pg-proxy.js';
import { act, ready, requestIdOf, startStack } from '../persistence/stack.js';

describe.skipIf(!svc.postgres)('a stuck error after an outage (PostgreSQL)', { timeout: 120_000 }, () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: PgProxy;
  let run: Running;

  beforeAll(async () => {
    db = await freshDatabase('regr_stuck_error');
    proxy = await PgProxy.forUrl(db.url).start();
    run = await startStack({ databaseUrl: proxy.rewrite(db.url), nics: 0, gpus: 1, opDelayMs: 1_500 });
    await ready(run, 1);
  }, 60_000);
  afterAll(async () => {
    proxy?.restore();
    await run?.stop();
    await proxy?.stop();
    await db?.drop();
  });

  const stored = async (id: string): Promise<string | undefined> =>
    (await query<{ state: string }>(db.url, 'select state from accelerators where id = $1', [id]))[0]?.state;

  it('a disable whose last commit meets the outage ends inactive once the database is back, never in error', async () => {
    const id = run.conductor.listAccelerators()[0]!.id;
    expect((await act(run, id, 'enable', requestIdOf('stuck-enable'))).status).toBeLessThan(300);
    await eventually(async () => (await stored(id)) === 'ready', { what: 'the card enabled' });

    const disable = act(run, id, 'disable', requestIdOf('stuck-disable'));
    // The uninstall outlasts deferMaxMs: its busy step is written alone, then the database goes.
    await eventually(async () => (await stored(id)) === 'uninstalling', { what: 'uninstalling written', timeoutMs: 5_000 });
    proxy.cut();
    const seen = new Set<string>();
    const watch = setInterval(() => seen.add(run.conductor.getAccelerator(id).state), 25);
    // The driver finishes during the outage (1.5 s) and the journal gives up on the database (1 s).
    await new Promise((r) => setTimeout(r, 3_000));
    proxy.restore();

    await eventually(() => run.conductor.getAccelerator(id).state === 'inactive', { what: 'the card inactive in the view', timeoutMs: 20_000 });
    clearInterval(watch);
    expect(await stored(id)).toBe('inactive');
    expect([...seen]).not.toContain('error');
    // The operator's request was never told "not done" for what was done.
    const answer = await disable;
    expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
    const log = await query<{ to: string }>(db.url, `select "to" from transition_log where id = $1 order by seq`, [id]);
    expect(log.map((r) => r.to)).toEqual(['inactive', 'installing', 'ready', 'uninstalling', 'inactive']);
  });
});
