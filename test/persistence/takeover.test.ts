import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDriver } from '../../drivers/fake/index.js';
import { withoutIdentity } from '../../model/index.js';
import type { PgJournal } from '../../db/pg-journal.js';
import { svc } from '../services.js';
import { freshDatabase, openTestJournal, query } from '../support/database.js';

/**
 * Two conductors' journals on one database: a host changes hands, and what the new owner knows
 * of its committed inventory must be what the previous owner last wrote, not what it saw at start.
 */
describe.skipIf(!svc.postgres)("persistence: a taken-over host's inventory (PostgreSQL)", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let first: PgJournal | undefined;
  let heir: PgJournal | undefined;

  beforeAll(async () => {
    db = await freshDatabase('takeover');
  });
  afterAll(async () => {
    await first?.close();
    await heir?.close();
    await db?.drop();
  });

  it('a report equal to what the heir saw at start is still written when the previous owner changed it since', async () => {
    const fake = new FakeDriver({ host: 'compute-1', gpus: 2, nics: 0 });
    // As the conductor commits an inventory: the cards' serials are in the accelerators' records.
    const v1 = withoutIdentity(await fake.discover());
    first = await openTestJournal(db.url);
    await first.load();
    await first.commit([{ type: 'inventory', host: 'compute-1', devices: v1 }]);

    // The heir starts now: it has seen v1.
    heir = await openTestJournal(db.url);
    await heir.load();

    // The first owner writes v2 (a GPU gone), then dies; the heir takes compute-1 over.
    const v2 = v1.filter((d) => d.type !== 'GPU' || d !== v1.find((x) => x.type === 'GPU'));
    await first.commit([{ type: 'inventory', host: 'compute-1', devices: v2 }]);
    await first.close();
    first = undefined;
    const taken = await heir.loadHosts(['compute-1']);
    expect(taken.hosts[0]!.devices).toEqual(v2);

    // The agent reports v1 again (the GPU is back): it must reach the database.
    await heir.commit([{ type: 'inventory', host: 'compute-1', devices: v1 }]);
    const rows = await query<{ n: number }>(db.url, `select count(*)::int as n from devices where hostname = 'compute-1'`);
    expect(rows[0]!.n).toBe(v1.filter((d) => !d.stub).length);
  });
});
