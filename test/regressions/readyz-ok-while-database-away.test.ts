/**
 * Issue 26: with two conductors, `/readyz` asked one of them, and the one with nothing to write
 * said "ok" while every write got 503 (200 in 113 of 230 samples of a 120 s outage); during a
 * partition (commits hang, no error) it said 200 throughout. Now every conductor the view holds is
 * asked, and each answers with a round trip to its database that must come back in time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { svc } from '../services.js';
import { Deployment } from '../nats/deployment.js';
import { PgProxy } from '../persistence/pg-proxy.js';

const readyz = async (url: string): Promise<{ status: number; body: string }> => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: await res.text() };
};

/** `/readyz` sampled every 250 ms for `ms`: every answer. */
async function sample(url: string, ms: number): Promise<{ status: number; body: string }[]> {
  const out: { status: number; body: string }[] = [];
  for (const end = Date.now() + ms; Date.now() < end; ) {
    out.push(await readyz(url));
    await new Promise((r) => setTimeout(r, 250));
  }
  return out;
}

describe.skipIf(!svc.nats || !svc.postgres)('readiness with two conductors while their database is away', { timeout: 240_000 }, () => {
  let dep: Deployment;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: PgProxy;
  let url: string;

  beforeAll(async () => {
    db = await freshDatabase('regress_readyz_two_conductors');
    proxy = await PgProxy.forUrl(db.url).start();
    dep = new Deployment(svc.nats!, proxy.rewrite(db.url));
    await dep.conductor('ready-a');
    await dep.agent('node-r');
    await dep.conductor('ready-b');
    url = (await dep.apiRole('api-r')).url;
    await eventually(async () => (await readyz(url)).status === 200, { what: 'the api role ready', timeoutMs: 60_000 });
  }, 200_000);
  afterAll(async () => {
    proxy?.restore();
    proxy?.release();
    await dep?.stop();
    await proxy?.stop();
    await db?.drop();
  });

  it('is 503 throughout a partition (commits hang without an error), then 200 again', async () => {
    dep.logsOnFailure();
    proxy.hold();
    await eventually(async () => (await readyz(url)).status === 503, { what: 'the first 503', timeoutMs: 10_000 });
    const during = await sample(url, 5_000);
    expect(during.filter((r) => r.status !== 503)).toEqual([]);
    expect(during.at(-1)!.body).toMatch(/did not answer a probe|did not answer/);
    proxy.release();
    await eventually(async () => (await readyz(url)).status === 200, { what: 'ready again after the partition', timeoutMs: 60_000 });
  });

  it('is 503 throughout a stop of the database, whichever conductor would answer, then 200 again', async () => {
    proxy.cut();
    await eventually(async () => (await readyz(url)).status === 503, { what: 'the first 503', timeoutMs: 10_000 });
    const during = await sample(url, 5_000);
    expect(during.filter((r) => r.status !== 503)).toEqual([]);
    expect(during.at(-1)!.body).toMatch(/database/);
    proxy.restore();
    await eventually(async () => (await readyz(url)).status === 200, { what: 'ready again after the stop', timeoutMs: 60_000 });
  });
});
