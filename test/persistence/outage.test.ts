import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Change } from '../../actors/runtime/index.js';
import type { PgJournal } from '../../db/pg-journal.js';
import { CyborgError } from '../../errors/index.js';
import type { Running } from '../../roles/all-in-one.js';
import { svc } from '../services.js';
import { freshDatabase, openTestJournal, query } from '../support/database.js';
import { PgProxy } from './pg-proxy.js';
import { act, ready, requestIdOf, startStack } from './stack.js';
import { eventually } from '../support/eventually.js';
import { recordOf } from '../support/records.js';

const NOVA = { 'x-auth-token': 'admin', 'content-type': 'application/json' };

interface Outcome {
  requestId: string;
  id: string;
  status: number;
  state?: string;
  code?: string;
  retryAfter?: string;
}

/**
 * How long the long outage keeps the database away. A minute is what the conductor must ride out
 * (it died for good after ~10 s before); CYBORG_TEST_LONG_OUTAGE_MS shortens it for a quick local run.
 */
const LONG_OUTAGE_MS = Number(process.env.CYBORG_TEST_LONG_OUTAGE_MS ?? 60_000);

/** Every unhandled rejection of this process while a test runs: there must be none. */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => {
  unhandled.push(reason);
};

describe.skipIf(!svc.postgres)('persistence: the database goes away under load and comes back (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: PgProxy;
  let run: Running;

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    db = await freshDatabase('outage');
    proxy = await PgProxy.forUrl(db.url).start();
    // The production default: a commit may wait 10 s for the database; the journal still says
    // 503 within about a second of it going away (before any client or bus times out).
    run = await startStack({ databaseUrl: proxy.rewrite(db.url), nics: 2, vfsPerNic: 20, gpus: 0 });
    await ready(run, 41);
    const dp = await run.app.inject({
      method: 'POST',
      url: '/v2/device_profiles',
      headers: NOVA,
      payload: JSON.stringify([{ name: 'outage-dp', groups: [{ 'resources:CUSTOM_NIC': '1' }] }]),
    });
    expect(dp.statusCode).toBe(201);
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    proxy?.restore();
    await run?.stop();
    await proxy?.stop();
    await db?.drop();
  });

  const readyz = async (): Promise<{ status: number; database?: string }> => {
    const res = await run.app.inject({ method: 'GET', url: '/readyz' });
    return { status: res.statusCode, database: (res.json() as { checks: Record<string, string> }).checks.database };
  };

  /**
   * One operator per accelerator toggles it enable/disable as fast as answers come back (and as
   * a 503's Retry-After asks); the database goes away for `outageMs`, then comes back.
   */
  async function outage(outageMs: number): Promise<void> {
    const ids = run.conductor
      .listAccelerators()
      .filter((a) => a.deviceType === 'NIC')
      .map((a) => a.id);
    const arqsBefore = Number((await query<{ n: string }>(db.url, 'select count(*) as n from extended_accelerator_requests'))[0]!.n);
    const outcomes: Outcome[] = [];
    let stop = false;
    let seq = 0;
    const workers: Promise<void>[] = ids.map(async (id) => {
      while (!stop) {
        // The live machine decides (a commit answered 503 leaves the committed view behind).
        const allowed = run.conductor.tree.acceleratorActor(id).allowed();
        const action = allowed.includes('ENABLE') ? 'enable' : allowed.includes('DISABLE') ? 'disable' : allowed.includes('RETRY') ? 'retry' : null;
        if (!action) {
          await new Promise((r) => setTimeout(r, 5));
          continue;
        }
        const requestId = requestIdOf(`op-${outageMs}-${seq++}`);
        const r = await act(run, id, action, requestId);
        outcomes.push({
          requestId,
          id,
          status: r.status,
          state: r.body.state as string | undefined,
          code: r.body.code as string | undefined,
          ...(r.retryAfter ? { retryAfter: r.retryAfter } : {}),
        });
        if (r.status === 503) await new Promise((res) => setTimeout(res, Number(r.retryAfter ?? 1) * 1000));
      }
    });
    const acked = (): number => outcomes.filter((o) => o.status === 200).length;
    // Nova creating ARQs and an operator creating device profiles, as fast as answers come.
    const creates: { kind: 'arq' | 'profile'; name: string; status: number; code?: string }[] = [];
    const create = async (kind: 'arq' | 'profile'): Promise<number> => {
      const name = `dp-${outageMs}-${seq++}`;
      const res =
        kind === 'arq'
          ? await run.app.inject({
              method: 'POST',
              url: '/v2/accelerator_requests',
              headers: NOVA,
              payload: JSON.stringify({ device_profile_name: 'outage-dp' }),
            })
          : await run.app.inject({
              method: 'POST',
              url: '/v2/device_profiles',
              headers: NOVA,
              payload: JSON.stringify([{ name, groups: [{ 'resources:CUSTOM_NIC': '1' }] }]),
            });
      creates.push({ kind, name, status: res.statusCode, ...(res.statusCode >= 400 ? { code: (res.json() as { code?: string }).code } : {}) });
      return res.statusCode;
    };
    const creator = async (kind: 'arq' | 'profile'): Promise<void> => {
      while (!stop) {
        if ((await create(kind)) === 503) await new Promise((r) => setTimeout(r, 200));
      }
    };
    workers.push(creator('arq'), creator('profile'));

    await eventually(() => acked() >= 100, { what: '100 acknowledged transitions before the outage' });
    expect((await readyz()).status).toBe(200);
    const cutAt = Date.now();
    proxy.cut();
    await eventually(() => outcomes.some((o) => o.status === 503), { what: 'a 503 while the database is gone' });
    // Reads go on, and the role says it is not ready, and why.
    expect((await run.app.inject({ method: 'GET', url: '/cyborg/v1/accelerators' })).statusCode).toBe(200);
    const away = await eventually(
      async () => {
        const r = await readyz();
        return r.status === 503 ? r : null;
      },
      { what: '/readyz to say the database is away' },
    );
    expect(away.database).toMatch(/database unreachable/);
    // What Nova and the operator send now is refused at once, and never made (checked below).
    // (The background creators' requests on the wire at the cut may wait for the database: their
    // fate is known only from it.)
    for (const kind of ['arq', 'profile', 'arq', 'profile'] as const) expect(await create(kind)).toBe(503);
    await new Promise((r) => setTimeout(r, Math.max(0, outageMs - (Date.now() - cutAt))));
    proxy.restore();
    await eventually(async () => (await readyz()).status === 200, { what: '/readyz to recover by itself', timeoutMs: 30_000 });
    const afterOutage = acked();
    await eventually(() => acked() >= afterOutage + 100, { what: '100 more acknowledged transitions once it is back', timeoutMs: 30_000 });
    stop = true;
    await Promise.all(workers);
    await eventually(() => (run.journal as PgJournal).pending === 0, { what: 'the queue to drain' });

    // 503 means not done: no refused action left a trace, no refused create exists — in the
    // database or in what the API shows.
    const refusedActions = outcomes.filter((o) => o.status === 503).map((o) => o.requestId);
    expect(await query(db.url, 'select request_id from transition_log where request_id = any($1)', [refusedActions])).toEqual([]);
    expect(creates.some((c) => c.status === 503)).toBe(true);
    expect(creates.every((c) => c.status === 201 || c.status === 503)).toBe(true);
    const arqsMade = creates.filter((c) => c.kind === 'arq' && c.status === 201).length;
    const arqRows = await query<{ n: string }>(db.url, 'select count(*) as n from extended_accelerator_requests');
    expect(Number(arqRows[0]!.n)).toBe(arqsMade + arqsBefore);
    const shown = await run.app.inject({ method: 'GET', url: '/v2/accelerator_requests', headers: NOVA });
    expect((shown.json() as { arqs: unknown[] }).arqs.length).toBe(arqsMade + arqsBefore);
    const profiles = new Set((await query<{ name: string }>(db.url, 'select name from device_profiles')).map((r) => r.name));
    for (const c of creates.filter((x) => x.kind === 'profile')) expect(profiles.has(c.name), `${c.name} answered ${c.status}`).toBe(c.status === 201);
    const listed = new Set(
      (
        (await run.app.inject({ method: 'GET', url: '/v2/device_profiles', headers: NOVA })).json() as { device_profiles: { name: string }[] }
      ).device_profiles.map((d) => d.name),
    );
    expect([...listed].sort()).toEqual([...profiles].sort());

    const unavailable = outcomes.filter((o) => o.status === 503);
    expect(unavailable.length).toBeGreaterThan(0);
    expect(unavailable.every((o) => o.code === 'persistence.unavailable' && Number(o.retryAfter) >= 1)).toBe(true);
    expect(outcomes.every((o) => o.status === 200 || o.status === 503 || o.status === 409)).toBe(true);

    // Every acknowledged answer's final state is in the log under its request id.
    const okOnes = outcomes.filter((o) => o.status === 200);
    const rows = await query<{ request_id: string; to: string }>(db.url, 'select request_id, "to" from transition_log where request_id = any($1)', [
      okOnes.map((o) => o.requestId),
    ]);
    const logged = new Set(rows.map((r) => `${r.request_id}/${r.to}`));
    const lost = okOnes.filter((o) => !logged.has(`${o.requestId}/${o.state}`));
    expect(lost).toEqual([]);

    // The work queued during the outage was written too: the table agrees with the actors.
    const table = new Map((await query<{ id: string; state: string }>(db.url, 'select id, state from accelerators')).map((r) => [r.id, r.state]));
    for (const id of ids) expect(table.get(id), id).toBe(run.conductor.tree.acceleratorActor(id).state);
    // And what the API shows catches up with it, even for an accelerator whose last change was
    // answered 503 and that has not moved since.
    await eventually(() => ids.every((id) => run.conductor.getAccelerator(id).state === table.get(id)), { what: 'the committed views to catch up' });
    expect(unhandled).toEqual([]);
  }

  it('a 2 s outage: callers get 503 with Retry-After, /readyz says so, the process stays up, nothing acknowledged is lost and nothing answered 503 is made', async () => {
    await outage(2_000);
  });

  it(
    `a ${Math.round(LONG_OUTAGE_MS / 1000)} s outage: the same, and the conductor recovers by itself`,
    async () => {
      await outage(LONG_OUTAGE_MS);
    },
    LONG_OUTAGE_MS + 90_000,
  );
});

describe.skipIf(!svc.postgres)('persistence: a stop while the database is away (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: PgProxy;
  let journal: PgJournal;

  beforeEach(async () => {
    db = await freshDatabase('outage_stop');
    proxy = await PgProxy.forUrl(db.url).start();
    journal = await openTestJournal(proxy.rewrite(db.url), { unavailableAfterMs: 300, closeTimeoutMs: 500 });
  });
  afterEach(async () => {
    await proxy?.stop();
    await db?.drop();
  });

  it('does not hang: what was never acknowledged is answered "shutting down", and nothing is left unhandled', async () => {
    const change = (n: number): Change[] => [{ type: 'accelerator', id: `stop-${n}`, host: 'h1', record: recordOf('enabled') }];
    await journal.commit(change(0));
    proxy.cut();
    const waiting = journal.commit(change(1)).then(
      () => 'ok',
      (e: unknown) => (e as CyborgError).code,
    );
    // Dropped by its caller, as a system transition's commit is: it must not crash anything.
    void journal.commit(change(2));
    await eventually(() => !journal.available, { what: 'the journal to see the database gone' });
    expect(await waiting).toBe('persistence.unavailable');
    expect(journal.readiness()).toMatch(/database unreachable/);
    // A commit made now is answered at once.
    expect(
      await journal.commit(change(3)).then(
        () => 'ok',
        (e: unknown) => (e as CyborgError).code,
      ),
    ).toBe('persistence.unavailable');
    await journal.close();
    await expect(journal.commit(change(4))).rejects.toMatchObject({ code: 'service.shutting_down' });
    expect(await query(db.url, `select id from accelerators where id like 'stop-%' order by id`)).toEqual([{ id: 'stop-0' }]);
    expect(unhandled).toEqual([]);
  });
});

describe.skipIf(!svc.postgres)('persistence: 503 means "not done" (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: PgProxy;
  let journal: PgJournal;

  beforeEach(async () => {
    db = await freshDatabase('outage_not_done');
    proxy = await PgProxy.forUrl(db.url).start();
    journal = await openTestJournal(proxy.rewrite(db.url), { unavailableAfterMs: 300, closeTimeoutMs: 500 });
  });
  afterEach(async () => {
    proxy.release();
    proxy.restore();
    await journal?.close().catch(() => undefined);
    await proxy?.stop();
    await db?.drop();
  });

  /** One accelerator's transition: a row and a log line, as an actor commits it. */
  const step = (id: string): Change[] => [
    { type: 'accelerator', id, host: 'h1', record: recordOf('ready') },
    { type: 'transition', record: { kind: 'accelerator', id, host: 'h1', event: 'ENABLE', from: 'inactive', to: 'ready', at: new Date().toISOString() } },
  ];
  const outcome = (p: Promise<void>): Promise<string> =>
    p.then(
      () => 'ok',
      (e: unknown) => (e as CyborgError).code,
    );
  const inDatabase = async (): Promise<string[]> => (await query<{ id: string }>(db.url, 'select id from accelerators order by id')).map((r) => r.id);

  it('a commit answered 503 is never written, not even once the database is back', async () => {
    expect(await outcome(journal.commit(step('before')))).toBe('ok');
    proxy.cut();
    const during = [
      outcome(journal.commit(step('during-1'))),
      outcome(journal.commit(step('during-2'), { defer: true })),
      outcome(journal.commit(step('during-3'))),
    ];
    expect(await Promise.all(during)).toEqual(['persistence.unavailable', 'persistence.unavailable', 'persistence.unavailable']);
    expect(journal.stats.dropped).toBe(3);
    proxy.restore();
    await eventually(() => journal.available, { what: 'the journal to see the database back by itself' });
    expect(await outcome(journal.commit(step('after')))).toBe('ok');
    expect(await inDatabase()).toEqual(['after', 'before']);
    expect(journal.pending).toBe(0);
  });

  it('a commit whose COMMIT went out before the connection broke is not answered 503: it is acknowledged once the database shows it landed', async () => {
    expect(await outcome(journal.commit(step('warm')))).toBe('ok');
    // The journal idle again (no flush open): the next flush goes alone, one statement that commits by itself.
    await eventually(() => journal.pending === 0, { what: 'the journal idle' });
    // The server runs the statement and commits, but its answer never comes back...
    proxy.hold();
    const landed = outcome(journal.commit(step('landed')));
    await eventually(async () => (await inDatabase()).includes('landed'), { what: 'the server to commit it' });
    // ...and then the connection breaks: whether it was written is not known here.
    proxy.cut();
    const refused = outcome(journal.commit(step('refused')));
    expect(await refused).toBe('persistence.unavailable');
    let answer: string | undefined;
    void landed.then((a) => {
      answer = a;
    });
    await new Promise((r) => setTimeout(r, 1_000));
    expect(answer).toBeUndefined();
    proxy.release();
    proxy.restore();
    expect(await landed).toBe('ok');
    expect(await inDatabase()).toEqual(['landed', 'warm']);
    expect(journal.stats.landedAfterRefusal).toBe(0);
  });

  it('a device profile whose COMMIT answer was lost is written again once the database is back, and exists once, as committed', async () => {
    // A flush without a transition row has no stamp to look up: written again, it must change nothing.
    const profile = (name: string): Change[] => [
      {
        type: 'document',
        collection: 'device_profiles',
        id: '0c6f2a1e-8d4b-4c3a-9e2f-1b0a9c8d7e6f',
        body: {
          uuid: '0c6f2a1e-8d4b-4c3a-9e2f-1b0a9c8d7e6f',
          name,
          description: null,
          groups: [{ 'resources:PGPU': '1' }],
          createdAt: '2026-11-27T10:00:00.000Z',
          updatedAt: null,
        },
      },
    ];
    const profiles = (): Promise<{ uuid: string; name: string; created_at: Date; updated_at: Date }[]> =>
      query(db.url, 'select uuid, name, created_at, updated_at from device_profiles');
    expect(await outcome(journal.commit(step('warm')))).toBe('ok');
    await eventually(() => journal.pending === 0, { what: 'the journal idle' });
    // The profile's transaction reaches its COMMIT; the server commits it, but the answer never comes back.
    proxy.stallNextCommit();
    const landed = outcome(journal.commit(profile('gpu-small')));
    await eventually(() => proxy.stalledCommits === 1, { what: "the profile's COMMIT" });
    proxy.hold();
    proxy.releaseCommit();
    await eventually(async () => (await profiles()).length === 1, { what: 'the server to commit the profile' });
    proxy.cut();
    // The journal saw its connection break with the answer missing: it retries (it does not know whether the profile landed).
    await eventually(() => journal.stats.retries > 0, { what: 'the flush to be retried' });
    proxy.release();
    proxy.restore();
    expect(await landed).toBe('ok');
    const rows = await profiles();
    expect(rows.map((r) => [r.uuid, r.name, r.created_at.toISOString(), r.updated_at.toISOString()])).toEqual([
      ['0c6f2a1e-8d4b-4c3a-9e2f-1b0a9c8d7e6f', 'gpu-small', '2026-11-27T10:00:00.000Z', '2026-11-27T10:00:00.000Z'],
    ]);
    // And the journal goes on: the next commit is written.
    expect(await outcome(journal.commit(step('after')))).toBe('ok');
    expect(await inDatabase()).toEqual(['after', 'warm']);
  });
});
