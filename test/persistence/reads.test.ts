import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PgJournal } from '../../db/pg-journal.js';
import { svc } from '../services.js';
import { freshDatabase, query } from '../support/database.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { PgProxy } from './pg-proxy.js';
import { configFor } from './stack.js';
import { eventually } from '../support/eventually.js';

/**
 * The all-in-one's pieces, with a longer agent request timeout: the agent waits 10 s for an
 * inventory reply, and a first report of 10,000 deployables on one host (rows + 10,000 actors +
 * their DISCOVERED log rows) can take longer than that on a loaded machine.
 */
async function startRuntime(databaseUrl: string): Promise<Stack> {
  const config = configFor({ databaseUrl, nics: 500, vfsPerNic: 20, gpus: 0 });
  return startStack({
    hosts: [config.host],
    fake: config.fake,
    timing: config.timing,
    journal: { databaseUrl },
    api: true,
    log: quietLogger(),
    agent: { discoveryIntervalMs: config.timing.discoveryIntervalMs, requestTimeoutMs: 240_000, telemetryIntervalMs: 0 },
  });
}

describe.skipIf(!svc.postgres)('persistence: reads never wait for a flush (PostgreSQL, 10,000 accelerators)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: PgProxy;
  let run: Stack;

  beforeAll(async () => {
    db = await freshDatabase('reads');
    proxy = await PgProxy.forUrl(db.url).start();
    // 500 NICs × 20 VFs + the fake FPGA.
    run = await startRuntime(proxy.rewrite(db.url));
    await eventually(() => run.conductor.listAccelerators().length === 10_001, { what: '10,001 accelerators', timeoutMs: 240_000 });
  }, 300_000);
  afterAll(async () => {
    proxy?.release();
    await run?.stop();
    await proxy?.stop();
    await db?.drop();
  });

  it('an operator lists 10,001 accelerators while a flush is stuck, and sees only what is committed', async () => {
    const [{ n }] = (await query<{ n: number }>(db.url, 'select count(*)::int as n from accelerators')) as [{ n: number }];
    expect(n).toBe(10_001);
    const id = run.conductor.listAccelerators().find((a) => a.deviceType === 'FPGA')!.id;
    proxy.hold();
    const enabling = run.conductor.act(id, { type: 'ENABLE' }, { requestId: 'req-reads' });
    await eventually(() => (run.journal as PgJournal).pending > 0, { what: 'the enable to wait for its commit' });

    // The operator reads the whole fleet page by page, following `next`, while the flush is held.
    const seen: { id: string; state: string }[] = [];
    for (let url: string | undefined = '/cyborg/v1/accelerators'; url; ) {
      const list = await run.app.inject({ method: 'GET', url });
      expect(list.statusCode).toBe(200);
      const body = list.json() as { accelerators: { id: string; state: string }[]; next?: string };
      seen.push(...body.accelerators);
      url = body.next;
    }
    expect(seen).toHaveLength(10_001);
    // The machine has moved on, but the list shows the last committed state.
    expect(seen.find((a) => a.id === id)!.state).toBe('inactive');

    proxy.release();
    expect((await enabling).state).toBe('ready');
  });
});
