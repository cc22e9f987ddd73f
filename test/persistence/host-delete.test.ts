import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDriver } from '../../drivers/fake/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { cyborg } from '../cli/harness.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { svc } from '../services.js';
import { configFor } from './stack.js';

/**
 * A host deleted on PostgreSQL stays deleted: after a restart of the whole all-in-one the conductor
 * rebuilds no actor for it, while its audit rows (the removals, the host's DELETE) remain.
 */
describe.skipIf(!svc.postgres)('host delete on PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let r: Running | undefined;
  beforeAll(async () => {
    db = await freshDatabase('host_delete');
  });
  afterAll(async () => {
    await r?.stop();
    await db?.drop();
  });

  const start = async (host: string): Promise<Running> => {
    const base = configFor({ databaseUrl: db.url, host, gpus: 1, nics: 0 });
    const config = { ...base, timing: { ...base.timing, heartbeatIntervalMs: 50, staleAfterMs: 300, lostAfterMs: 600 } };
    r = await startAllInOne(config, quietLogger(), { fake: new FakeDriver({ host, gpus: 1, nics: 0 }) });
    return r;
  };

  it("forgets the host's rows and keeps its audit", async () => {
    let run = await start('pg-gone');
    await run.agent.stop();
    await eventually(() => run.conductor.getHost('pg-gone').state === 'lost', { what: 'the host lost' });
    const deleted = await cyborg('host', 'delete', 'pg-gone', '--url', run.url);
    expect([deleted.code, deleted.stderr]).toEqual([0, '']);
    await run.stop();
    r = undefined;

    // Restarted with another host's agent: the deleted one is not rebuilt from the database.
    run = await start('pg-other');
    expect(run.conductor.listHosts().map((h) => h.name)).toEqual(['pg-other']);
    const audit = await run.conductor.audit({ host: 'pg-gone', limit: 50 });
    expect(audit.entries.map((e) => e.event)).toEqual(expect.arrayContaining(['DELETE', 'REMOVE']));
  });
});
