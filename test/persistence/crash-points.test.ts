import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Change, CommitOptions } from '../../actors/runtime/index.js';
import type { TransitionRecord } from '../../model/index.js';
import { migrate, openOrm } from '../../db/config.js';
import { PgJournal } from '../../db/pg-journal.js';
import { NAMESPACE_DNS, uuid3 } from '../../ids/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { svc } from '../services.js';
import { freshDatabase, query } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { PgProxy } from './pg-proxy.js';
import { act, configFor, ready, startStack } from './stack.js';

const HOST = 'crash-points-1';
const NOVA = { 'x-auth-token': 'admin', 'content-type': 'application/json' };
/** What Cyborg's API may say of an ARQ (api/v2/accelerator-requests.ts). */
const CYBORG_STATES = ['Initial', 'BindStarted', 'Bound', 'BindFailed', 'Unbound', 'UnbindFailed', 'Deleting'];

/** The commits one Nova boot hands the journal, in order: what each crash point is placed by (docs/persistence.md). */
const PATH = {
  create: ['arq Initial'],
  bind: ['arq BindStarted (deferred)', 'accelerator attaching (deferred)', 'accelerator attached (deferred)', 'arq Bound'],
  delete: ['arq Deleting (deferred)', 'accelerator detaching (deferred)', 'accelerator ready (deferred)', 'arq Deleted'],
};
const STEPS = [...PATH.create, ...PATH.bind, ...PATH.delete];

function label(changes: Change[], opts?: CommitOptions): string {
  const c = changes.find((x) => x.type === 'arq' || x.type === 'accelerator');
  const what = !c ? 'barrier' : c.type === 'arq' ? `arq ${c.deleted ? 'Deleted' : c.record.value}` : `accelerator ${c.record.value}`;
  return `${what}${opts?.defer ? ' (deferred)' : ''}`;
}

/**
 * The conductor's journal, killed as SIGKILL kills its process: at the `dieAt`th commit handed to
 * it, the database is cut away (every connection reset, none accepted again), so whatever was not
 * committed by then — queued, deferred or in flight — never is; from then on it writes nothing.
 * `holdAt` kills it once the `holdAt`th commit's flush is in the database but before its answer
 * came back (the reply is held in the proxy): committed, never acknowledged.
 */
class DyingJournal extends PgJournal {
  readonly calls: string[] = [];
  dieAt = Infinity;
  holdAt = Infinity;
  dead = false;
  proxy!: PgProxy;
  directUrl = '';

  override commit(changes: Change[], opts?: CommitOptions): Promise<void> {
    const n = this.dead ? 0 : this.calls.push(label(changes, opts));
    if (n === this.dieAt) this.kill();
    if (this.dead) {
      // As PgJournal's own answers, handled for callers that drop it (a step nobody awaits).
      const refused = Promise.reject(new Error('the conductor is dead'));
      refused.catch(() => undefined);
      return refused;
    }
    if (n !== this.holdAt) return super.commit(changes, opts);
    this.proxy.hold();
    const t = changes.find((c) => c.type === 'transition');
    if (t?.type === 'transition') void this.killOnceWritten(t.record);
    return super.commit(changes, opts);
  }

  /** Kills it once the log row of `t` is in the database (a flush commits whole). */
  private async killOnceWritten(t: TransitionRecord): Promise<void> {
    await eventually(
      async () =>
        (
          await query(this.directUrl, 'select 1 from transition_log where id = $1 and event = $2 and "to" = $3 and at = $4::timestamptz', [
            t.id,
            t.event,
            t.to,
            t.at,
          ])
        ).length > 0,
      { what: `the held flush of ${t.to} to be in the database` },
    );
    this.kill();
  }

  kill(): void {
    if (this.dead) return;
    this.dead = true;
    this.proxy.cut();
    // What it had queued (deferred steps, a flush retrying) is answered, never written: the
    // proxy refuses it every connection from now on.
    void this.close().catch(() => undefined);
  }
}

interface Acks {
  created?: string;
  bound: boolean;
  deleteSent: boolean;
  deleted: boolean;
}

async function call(run: Running, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await run.app.inject({ method, url, headers: NOVA, ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }) });
  return { status: res.statusCode, body: res.body ? (res.json() as unknown) : null };
}

/** Nova's boot and delete of one server, step by step, as far as the conductor answers. */
async function novaBoot(run: Running, acks: Acks): Promise<void> {
  const instance = randomUUID();
  const created = await call(run, 'POST', '/v2/accelerator_requests', { device_profile_name: 'crash-dp' });
  if (created.status !== 201) return;
  const uuid = (created.body as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
  acks.created = uuid;
  const bound = await call(run, 'PATCH', '/v2/accelerator_requests', {
    [uuid]: [
      { op: 'add', path: '/hostname', value: HOST },
      { op: 'add', path: '/device_rp_uuid', value: uuid3(NAMESPACE_DNS, `${HOST}_FakeDevice`) },
      { op: 'add', path: '/instance_uuid', value: instance },
    ],
  });
  if (bound.status !== 202) return;
  acks.bound = (await call(run, 'GET', `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`)).status === 200;
  if (!acks.bound) return;
  acks.deleteSent = true;
  acks.deleted = (await call(run, 'DELETE', `/v2/accelerator_requests?instance=${instance}`)).status === 204;
}

/** The FPGA's allocations as the operator API shows them. */
async function allocations(run: Running): Promise<{ arqUuid?: string }[]> {
  const { accelerators } = (await call(run, 'GET', '/cyborg/v1/accelerators')).body as { accelerators: { allocations: { arqUuid?: string }[] }[] };
  return accelerators.flatMap((a) => a.allocations);
}

describe.skipIf(!svc.postgres)('persistence: a conductor killed at every step of a Nova boot (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const log = quietLogger();

  beforeAll(async () => {
    db = await freshDatabase('crashpoints');
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** A conductor on a journal that dies as told, with the FPGA enabled and Nova's device profile in place. */
  async function doomed(setup: (j: DyingJournal) => void): Promise<{ run: Running; journal: DyingJournal; proxy: PgProxy }> {
    const proxy = await PgProxy.forUrl(db.url).start();
    const url = proxy.rewrite(db.url);
    const orm = await openOrm({ url, pool: 2 });
    await migrate(orm);
    const journal = new DyingJournal({
      orm,
      log,
      unavailableAfterMs: 10_000,
      maxBatch: 5_000,
      retryMinMs: 20,
      retryMaxMs: 100,
      closeTimeoutMs: 200,
      deferMaxMs: 60_000,
    });
    journal.proxy = proxy;
    journal.directUrl = db.url;
    const run = await startAllInOne(configFor({ databaseUrl: url, host: HOST, gpus: 0, nics: 0 }), log, { journal });
    await ready(run, 1);
    const fpga = run.conductor.listAccelerators()[0]!;
    if (fpga.state !== 'ready') expect((await act(run, fpga.id, 'enable', 'crash-enable')).status).toBe(200);
    const profiles = ((await call(run, 'GET', '/v2/device_profiles')).body as { device_profiles: { name: string }[] }).device_profiles;
    if (!profiles.some((p) => p.name === 'crash-dp')) {
      const dp = await call(run, 'POST', '/v2/device_profiles', [
        { name: 'crash-dp', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }] },
      ]);
      expect(dp.status).toBe(201);
    }
    journal.calls.length = 0;
    setup(journal);
    return { run, journal, proxy };
  }

  /** What is left of a killed conductor is stopped; it reaches the database no more. */
  async function bury(d: { run: Running; journal: DyingJournal; proxy: PgProxy }): Promise<void> {
    d.journal.kill();
    await Promise.race([d.run.stop().catch(() => undefined), new Promise((r) => setTimeout(r, 15_000).unref())]);
    await d.proxy.stop();
  }

  it('one boot, undisturbed, hands the journal the commits the crash points are placed by', async () => {
    const d = await doomed(() => undefined);
    const acks: Acks = { bound: false, deleteSent: false, deleted: false };
    await novaBoot(d.run, acks);
    expect(acks).toMatchObject({ bound: true, deleted: true });
    expect(d.journal.calls).toEqual(STEPS);
    await bury(d);
  });

  /**
   * What the restart finds, by how far the boot got (docs/persistence.md, "A Nova boot, crash by
   * crash"): a request's steps are written together with the commit that answers it, or not at all.
   */
  const before = (i: number): string[] =>
    i < PATH.create.length ? [] : i < PATH.create.length + PATH.bind.length ? ['Initial'] : i < STEPS.length ? ['Bound'] : [];
  const points = [
    ...STEPS.map((step, i) => ({
      name: `killed as \`${step}\` is handed to the journal`,
      left: before(i),
      set: (j: DyingJournal) => {
        j.dieAt = i + 1;
      },
    })),
    ...STEPS.flatMap((step, i) =>
      step.endsWith('(deferred)')
        ? []
        : [
            {
              name: `killed once \`${step}\` is committed, before its answer`,
              left: before(i + 1),
              set: (j: DyingJournal) => {
                j.holdAt = i + 1;
              },
            },
          ],
    ),
  ];

  it.each(points)(
    '$name: the restart finds $left as Cyborg reports it, nothing acknowledged lost, no handle held for a gone ARQ',
    async ({ set, left: expected }) => {
      const d = await doomed(set);
      const acks: Acks = { bound: false, deleteSent: false, deleted: false };
      await novaBoot(d.run, acks);
      await bury(d);

      const run = await startStack({ databaseUrl: db.url, host: HOST, gpus: 0, nics: 0 });
      try {
        await ready(run, 1);
        const arqs = ((await call(run, 'GET', '/v2/accelerator_requests')).body as { arqs: { uuid: string; state: string }[] }).arqs;
        for (const a of arqs) expect(CYBORG_STATES, `ARQ ${a.uuid}`).toContain(a.state);
        expect(arqs.map((a) => a.state)).toEqual(expected);
        expect(await allocations(run)).toHaveLength(expected.includes('Bound') ? 1 : 0);
        const mine = acks.created ? await call(run, 'GET', `/v2/accelerator_requests/${acks.created}`) : undefined;
        if (mine?.status === 200) expect(CYBORG_STATES).toContain((mine.body as { state: string }).state);
        if (acks.created && !acks.deleteSent) expect(mine?.status, 'an acknowledged create').toBe(200);
        if (acks.bound && !acks.deleteSent) {
          expect((mine!.body as { state: string }).state, 'an acknowledged bind').toBe('Bound');
          expect(await allocations(run)).toContainEqual(expect.objectContaining({ arqUuid: acks.created }));
        }
        if (acks.deleted) {
          await eventually(async () => (await call(run, 'GET', `/v2/accelerator_requests/${acks.created}`)).status === 404, {
            what: 'the acknowledged delete to be finished',
          });
        }
        // No handle is held for an ARQ that is gone.
        await eventually(
          async () => {
            const live = new Set(((await call(run, 'GET', '/v2/accelerator_requests')).body as { arqs: { uuid: string }[] }).arqs.map((a) => a.uuid));
            return (await allocations(run)).every((a) => !a.arqUuid || live.has(a.arqUuid));
          },
          { what: 'every held handle to belong to a live ARQ' },
        );

        // Nova cleans up what its failed boot left, and the card is free again.
        const left = ((await call(run, 'GET', '/v2/accelerator_requests')).body as { arqs: { uuid: string }[] }).arqs.map((a) => a.uuid);
        if (left.length > 0) expect((await call(run, 'DELETE', `/v2/accelerator_requests?arqs=${left.join(',')}`)).status).toBe(204);
        await eventually(
          async () =>
            (await allocations(run)).length === 0 && ((await call(run, 'GET', '/v2/accelerator_requests')).body as { arqs: unknown[] }).arqs.length === 0,
          { what: 'the card to be free and no ARQ left' },
        );
      } finally {
        await run.stop();
      }
    },
  );
});
