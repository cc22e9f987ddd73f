import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../roles/all-in-one.js';
import type { PgJournal } from '../../db/pg-journal.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { PgProxy } from './pg-proxy.js';
import { act, ready, requestIdOf, startStack } from './stack.js';
import { eventually } from '../support/eventually.js';

describe.skipIf(!svc.postgres)('persistence: acknowledged only after commit (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: PgProxy;
  let run: Running;
  let direct: pg.Pool;

  beforeAll(async () => {
    db = await freshDatabase('ack');
    proxy = await PgProxy.forUrl(db.url).start();
    run = await startStack({ databaseUrl: proxy.rewrite(db.url), nics: 8, vfsPerNic: 25, gpus: 0 });
    await ready(run, 201);
    direct = new pg.Pool({ connectionString: db.url, max: 4 });
  });
  afterAll(async () => {
    proxy?.release();
    await run?.stop();
    await direct?.end();
    await proxy?.stop();
    await db?.drop();
  });

  const committed = async (requestId: string, to: string): Promise<boolean> =>
    (await direct.query('select 1 from transition_log where request_id = $1 and "to" = $2', [requestId, to])).rowCount === 1;

  it("an operator's enable is answered only once the database has committed it", async () => {
    const id = run.conductor.listAccelerators().find((a) => a.deviceType === 'FPGA')!.id;
    proxy.hold();
    let answered = false;
    let r: Awaited<ReturnType<typeof act>>;
    try {
      const reply = act(run, id, 'enable', requestIdOf('held')).then((res) => {
        answered = true;
        return res;
      });
      // The transition reached the journal and went to the server, but the journal cannot hear
      // that it committed while the server's replies are held: so nobody is answered either.
      await eventually(() => (run.journal as PgJournal).pending > 0, { what: 'the commit to be queued' });
      await eventually(() => committed(requestIdOf('held'), 'installing'), { what: 'the server to have the row' });
      expect((run.journal as PgJournal).pending).toBeGreaterThan(0);
      expect(answered).toBe(false);
      proxy.release();
      r = await reply;
    } finally {
      proxy.release();
    }
    expect(r.status).toBe(200);
    expect(r.body.state).toBe('ready');
    expect(await committed(requestIdOf('held'), 'ready')).toBe(true);
  });

  it('under 200 concurrent requests, each reply finds its transition already in the database', async () => {
    const nics = run.conductor.listAccelerators().filter((a) => a.deviceType === 'NIC');
    expect(nics).toHaveLength(200);
    const results = await Promise.all(
      nics.map(async (a, i) => {
        const r = await act(run, a.id, 'enable', requestIdOf(`c${i}`));
        return { status: r.status, state: r.body.state, inDb: await committed(requestIdOf(`c${i}`), 'ready') };
      }),
    );
    expect(results.every((r) => r.status === 200 && r.state === 'ready' && r.inDb)).toBe(true);
  });
});
