import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, openOrm } from '../../db/config.js';
import { PgJournal } from '../../db/pg-journal.js';
import { NAMESPACE_DNS, uuid3 } from '../../ids/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { quietLogger } from '../support/log.js';
import { CountingProxy } from './counting-proxy.js';
import { act, configFor, ready } from './stack.js';

const NOVA = { 'x-auth-token': 'admin', 'content-type': 'application/json' };
const HOST = 'count-1';

/** One Nova boot and delete, as nova-conductor and nova-compute call Cyborg (bench/api/lifecycle.ts). */
async function novaCycle(run: Running): Promise<void> {
  const call = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown): Promise<{ status: number; body: unknown }> => {
    const res = await run.app.inject({ method, url, headers: NOVA, ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }) });
    return { status: res.statusCode, body: res.body ? (res.json() as unknown) : null };
  };
  const instance = randomUUID();
  const created = await call('POST', '/v2/accelerator_requests', { device_profile_name: 'count-dp' });
  expect(created.status).toBe(201);
  const uuid = (created.body as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
  const bound = await call('PATCH', '/v2/accelerator_requests', {
    [uuid]: [
      { op: 'add', path: '/hostname', value: HOST },
      { op: 'add', path: '/device_rp_uuid', value: uuid3(NAMESPACE_DNS, `${HOST}_FakeDevice`) },
      { op: 'add', path: '/instance_uuid', value: instance },
    ],
  });
  expect(bound.status).toBe(202);
  const resolved = await call('GET', `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`);
  expect(resolved.status).toBe(200);
  expect((resolved.body as { arqs: { state: string }[] }).arqs[0]!.state).toBe('Bound');
  expect((await call('DELETE', `/v2/accelerator_requests?instance=${instance}`)).status).toBe(204);
}

describe.skipIf(!svc.postgres)('persistence: a Nova boot costs one commit per state-changing request (PostgreSQL, counted on the wire)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: CountingProxy;
  let run: Running | undefined;

  beforeAll(async () => {
    db = await freshDatabase('commits');
    proxy = await CountingProxy.forUrl(db.url).start();
  });
  afterAll(async () => {
    await run?.stop();
    await proxy?.stop();
    await db?.drop();
  });

  it('create, bind and delete of an ARQ are three transactions of one round trip each, with nothing else in flight', async () => {
    const url = proxy.rewrite(db.url);
    const config = configFor({ databaseUrl: url, host: HOST, gpus: 0, nics: 0 });
    // A deferred step waits for company at most this long; a slow test machine must not make a bind's steps leave alone.
    const orm = await openOrm({ url, pool: 2 });
    await migrate(orm);
    const journal = new PgJournal({ orm, log: quietLogger(), unavailableAfterMs: 10_000, maxBatch: 5_000, deferMaxMs: 60_000 });
    run = await startAllInOne(config, quietLogger(), { journal });
    await ready(run, 1);
    const fpga = run.conductor.listAccelerators()[0]!;
    expect((await act(run, fpga.id, 'enable', 'count-enable')).status).toBe(200);
    const dp = await run.app.inject({
      method: 'POST',
      url: '/v2/device_profiles',
      headers: NOVA,
      payload: JSON.stringify([{ name: 'count-dp', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }] }]),
    });
    expect(dp.statusCode).toBe(201);
    await novaCycle(run); // the pool's connections are open, the statements prepared

    const cycles = 5;
    const from = proxy.trips.length;
    for (let i = 0; i < cycles; i++) await novaCycle(run);
    const seen = proxy.since(from);
    const story = seen.trips.map((t) => `${t.status} ${t.sql.map((s) => s.replace(/\s+/g, ' ').slice(0, 60)).join(' | ') || '(prepared)'}`).join('\n');
    // A read some periodic round might make meanwhile is not the boots' (none is expected: the
    // story shows it if one comes).
    const boots = seen.trips.filter((t) => !t.sql.every((q) => /^\s*select\b/i.test(q)) || t.sql.length === 0);
    expect(
      boots.filter((t) => t.statements > 0 && t.status === 'I'),
      story,
    ).toHaveLength(3 * cycles);
    expect(boots, story).toHaveLength(3 * cycles);
    // The hot path's statements are named: a connection parses a shape once (create, bind and
    // delete are three shapes, the pool has two connections), not once per commit (15 here).
    const parsed = boots.reduce((n, t) => n + t.sql.length, 0);
    expect(parsed, story).toBeLessThanOrEqual(3 * 2);
    // …and what they wrote is there: the log holds every step of every cycle.
    const history = await run.conductor.history(fpga.id);
    expect(history.slice(-4).map((h) => `${h.from}→${h.to}`)).toEqual(['ready→attaching', 'attaching→attached', 'attached→detaching', 'detaching→ready']);
  });
});
