import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PgJournal } from '../../db/pg-journal.js';
import type { AuditEntry } from '../../model/index.js';
import { svc } from '../services.js';
import { freshDatabase, query } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';

type Page = { audit: AuditEntry[]; next?: string };

/**
 * The audit story on PostgreSQL: an operator (noauth headers: user alice of project proj-a) enables
 * and programs an FPGA with her own request id, another (bob) reinstalls a host's driver, and a
 * silent host goes stale by itself. The audit log shows each with who asked, from → to, why and
 * the request id, answers every filter, pages with a cursor, and retention removes only the oldest.
 */
describe.skipIf(!svc.postgres)('audit: who did what, from the transition log (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let run: Stack;
  let fpga: string;
  const enableId = `req-${randomUUID()}`;
  const programId = `req-${randomUUID()}`;
  let beforeProgram: string;
  const alice = { 'x-user-id': 'alice', 'x-project-id': 'proj-a' };

  const get = async (url: string): Promise<Page> => {
    const res = await run.app.inject({ method: 'GET', url });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Page;
  };
  /** Every row a query matches, following `next` links. */
  const all = async (url: string): Promise<{ rows: AuditEntry[]; pages: number }> => {
    const rows: AuditEntry[] = [];
    let pages = 0;
    for (let next: string | undefined = url; next; ) {
      const p = await get(next);
      rows.push(...p.audit);
      pages++;
      next = p.next;
    }
    return { rows, pages };
  };

  beforeAll(async () => {
    db = await freshDatabase('audit');
    run = await startStack({
      hosts: ['compute-1', 'compute-2'],
      journal: { databaseUrl: db.url },
      api: true,
      log: quietLogger(),
      timing: { heartbeatIntervalMs: 100, staleAfterMs: 1_000, lostAfterMs: 120_000 },
    });
    fpga = run.conductor.listAccelerators({ host: 'compute-1', type: 'FPGA' })[0]!.id;

    const enabled = await run.app.inject({
      method: 'POST',
      url: `/cyborg/v1/accelerators/${fpga}/enable`,
      headers: { ...alice, 'x-openstack-request-id': enableId },
    });
    expect(enabled.statusCode, enabled.body).toBe(200);
    await new Promise((r) => setTimeout(r, 5)); // the program's rows are strictly later than the enable's
    beforeProgram = new Date().toISOString();
    const programmed = await run.app.inject({
      method: 'POST',
      url: `/cyborg/v1/accelerators/${fpga}/program`,
      headers: { ...alice, 'x-openstack-request-id': programId },
      payload: { bitstreamId: 'bs-fir-filter' },
    });
    expect(programmed.statusCode, programmed.body).toBe(200);

    for (const op of ['uninstall', 'install']) {
      const res = await run.app.inject({
        method: 'POST',
        url: `/cyborg/v1/drivers/${encodeURIComponent('fake@compute-2')}/${op}`,
        headers: { 'x-user-id': 'bob' },
        payload: {},
      });
      expect(res.statusCode, res.body).toBe(200);
    }

    // compute-2's agent stops: nothing asks, the conductor's timer makes the host stale.
    await run.agents[1]!.stop();
    await eventually(() => run.conductor.getHost('compute-2').state === 'stale', { what: 'compute-2 stale', timeoutMs: 10_000 });
    await eventually(async () => (await get('/cyborg/v1/audit?host=compute-2&kind=host')).audit.some((e) => e.to === 'stale'), {
      what: 'the stale transition committed',
      timeoutMs: 5_000,
    });
  }, 60_000);

  afterAll(async () => {
    await run?.stop();
    await db?.drop();
  });

  it('shows the enable and the program with alice, her project, her request ids and the bitstream', async () => {
    const { rows } = await all(`/cyborg/v1/audit?accelerator=${fpga}`);
    const mine = rows.filter((e) => e.actor === 'alice').reverse(); // oldest first
    expect(mine.map((e) => [e.event, e.from, e.to, e.requestId])).toEqual([
      ['ENABLE', 'inactive', 'installing', enableId],
      ['done: driver op', 'installing', 'ready', enableId],
      ['PROGRAM', 'ready', 'programming', programId],
      ['done: driver op', 'programming', 'programmed', programId],
    ]);
    expect(mine.every((e) => e.projectId === 'proj-a' && e.host === 'compute-1' && e.kind === 'accelerator')).toBe(true);
    expect(mine[2]!.args).toEqual({ bitstreamId: 'bs-fir-filter' });
    // Follow-ups of a driver's answer carry no arguments: they are not the operator's.
    expect(mine[3]!.args).toBeUndefined();
  });

  it('filters by user, project, action, host and time range', async () => {
    const byUser = (await all('/cyborg/v1/audit?user=alice')).rows;
    expect(new Set(byUser.map((e) => e.id))).toEqual(new Set([fpga]));
    expect((await all('/cyborg/v1/audit?project=proj-a')).rows).toEqual(byUser);

    const programs = (await get('/cyborg/v1/audit?action=program')).audit;
    expect(programs.map((e) => [e.id, e.requestId, e.args])).toEqual([[fpga, programId, { bitstreamId: 'bs-fir-filter' }]]);

    const compute1 = (await all('/cyborg/v1/audit?host=compute-1')).rows;
    expect(compute1.length).toBeGreaterThan(0);
    expect(compute1.every((e) => e.host === 'compute-1')).toBe(true);

    const since = (await all(`/cyborg/v1/audit?user=alice&since=${encodeURIComponent(beforeProgram)}`)).rows;
    expect(since.map((e) => e.requestId)).toEqual([programId, programId]);
    const until = (await all(`/cyborg/v1/audit?user=alice&until=${encodeURIComponent(beforeProgram)}`)).rows;
    expect(until.map((e) => e.requestId)).toEqual([enableId, enableId]);
  });

  it('logs the driver reinstall with bob as who asked', async () => {
    const rows = (await all('/cyborg/v1/audit?host=compute-2&kind=driver')).rows.reverse();
    expect(rows.map((e) => [e.event, e.from, e.to, e.actor])).toEqual([
      ['UNINSTALL', 'installed', 'uninstalling', 'bob'],
      ['done: driver op', 'uninstalling', 'uninstalled', 'bob'],
      ['INSTALL', 'uninstalled', 'installing', 'bob'],
      ['done: driver op', 'installing', 'installed', 'bob'],
    ]);
    expect(rows.every((e) => e.id === rows[0]!.id && e.requestId?.startsWith('req-'))).toBe(true);
    expect(new Set(rows.map((e) => e.requestId)).size).toBe(2);
  });

  it('names the automatic stale transition in words, by the conductor', async () => {
    const stale = (await get('/cyborg/v1/audit?action=' + encodeURIComponent('timer: stale'))).audit;
    expect(stale.map((e) => [e.kind, e.id, e.from, e.to, e.actor])).toEqual([['host', 'compute-2', 'online', 'stale', 'conductor']]);
    expect(stale[0]!.requestId).toBeUndefined();
  });

  it('pages newest first with a cursor: every row once, in (at, seq) order, whatever the page size', async () => {
    const whole = (await all('/cyborg/v1/audit?limit=1000')).rows;
    const paged = await all('/cyborg/v1/audit?limit=3');
    expect(paged.pages).toBeGreaterThan(2);
    expect(paged.rows).toEqual(whole);
    for (let i = 1; i < whole.length; i++) {
      const [a, b] = [whole[i - 1]!, whole[i]!];
      expect(a.at > b.at || (a.at === b.at && a.seq > b.seq)).toBe(true);
    }
    const bad = await run.app.inject({ method: 'GET', url: '/cyborg/v1/audit?marker=not-a-cursor' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'request.invalid', field: 'querystring/marker' });
    const badTime = await run.app.inject({ method: 'GET', url: '/cyborg/v1/audit?since=yesterday' });
    expect(badTime.statusCode).toBe(400);
  });

  it('retention deletes only the rows older than the limit, and keeps the newest rows by count', async () => {
    const journal = run.journal as PgJournal;
    const old = new Date(Date.now() - 3 * 86_400_000).toISOString();
    await journal.commit(
      [1, 2, 3].map((n) => ({
        type: 'transition' as const,
        record: {
          kind: 'host' as const,
          id: 'retired-host',
          host: 'retired-host',
          event: 'HEARTBEAT',
          from: 'online',
          to: 'online',
          at: old,
          actor: `agent:${n}`,
        },
      })),
    );
    const count = async (): Promise<number> => (await query<{ n: number }>(db.url, 'select count(*)::int as n from transition_log'))[0]!.n;
    const before = await count();
    const newest = await query<{ seq: string }>(db.url, 'select seq from transition_log order by at desc, seq desc');

    expect(await journal.prune({ maxAgeMs: 86_400_000, maxRows: 0 })).toBe(3);
    expect(await count()).toBe(before - 3);
    expect((await get('/cyborg/v1/audit?host=retired-host')).audit).toEqual([]);

    const keep = 5;
    expect(await journal.prune({ maxAgeMs: 0, maxRows: keep })).toBe(before - 3 - keep);
    const left = await query<{ seq: string }>(db.url, 'select seq from transition_log order by at desc, seq desc');
    expect(left.map((r) => r.seq)).toEqual(newest.slice(0, keep).map((r) => r.seq));
  });
});
