/**
 * The report door asks the database, not only its own conductor's memory: with several
 * conductors, the one holding host A knows nothing of host B's devices, and an inventory on host
 * A's subject naming them must still be refused — counted by reason, answered in our words.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReportDoor } from '../../actors/conductor/index.js';
import type { PgJournal } from '../../db/pg-journal.js';
import { FakeDriver } from '../../drivers/fake/index.js';
import type { DeviceT } from '../../model/index.js';
import { svc } from '../services.js';
import { freshDatabase, openTestJournal } from '../support/database.js';
import { quietLogger } from '../support/log.js';

describe.skipIf(!svc.postgres)('the report door (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let journal: PgJournal;
  let hostB: DeviceT[];

  beforeAll(async () => {
    db = await freshDatabase('door');
    journal = await openTestJournal(db.url);
    await journal.load();
    hostB = await new FakeDriver({ host: 'compute-b', gpus: 1, nics: 1 }).discover();
    await journal.commit([{ type: 'inventory', host: 'compute-b', devices: hostB }]);
  });
  afterAll(async () => {
    await journal?.close();
    await db?.drop();
  });

  /** A door whose conductor holds only host A, in memory: host B is another conductor's. */
  const door = (): ReportDoor =>
    new ReportDoor({ known: (h) => h === 'compute-a', heldHere: () => undefined, recorded: (ids) => journal.recordedHolders(ids), log: quietLogger() });

  it("lets host A report its own devices, and refuses it host B's device, deployable and attach handle", async () => {
    const d = door();
    const own = await new FakeDriver({ host: 'compute-a', gpus: 1, nics: 0 }).discover();
    await d.admit({ host: 'compute-a', agentId: 'a', epoch: 0, seq: 1, devices: own });
    const gpu = hostB.find((x) => x.type === 'GPU')!;
    const handleOnly: DeviceT = { ...own[0]!, deployables: [{ ...own[0]!.deployables[0]!, attachHandles: [{ ...gpu.deployables[0]!.attachHandles[0]! }] }] };
    for (const devices of [[gpu], [{ ...own[0]!, deployables: [gpu.deployables[0]!] }], [handleOnly]]) {
      await expect(d.admit({ host: 'compute-a', agentId: 'a', epoch: 0, seq: 2, devices })).rejects.toMatchObject({
        code: 'request.forbidden',
        details: { reason: 'foreign_device' },
      });
    }
    expect(d.refused).toMatchObject({ foreign_device: 3, duplicate_device: 0, unregistered_host: 0 });
  });

  it('asks the database only about ids new to the host: a re-sent inventory costs no query, a forged id in it still does', async () => {
    const own = await new FakeDriver({ host: 'compute-a', gpus: 1, nics: 0 }).discover();
    const asked: string[][] = [];
    const d = new ReportDoor({
      known: (h) => h === 'compute-a',
      heldHere: () => undefined,
      inventoryOf: () => own,
      log: quietLogger(),
      recorded: (ids) => {
        asked.push(ids);
        return journal.recordedHolders(ids);
      },
    });
    await d.admit({ host: 'compute-a', agentId: 'a', epoch: 0, seq: 3, devices: own });
    expect(asked).toEqual([]);
    const handle = hostB.find((x) => x.type === 'GPU')!.deployables[0]!.attachHandles[0]!;
    const forged: DeviceT = { ...own[0]!, deployables: [{ ...own[0]!.deployables[0]!, attachHandles: [handle] }] };
    await expect(d.admit({ host: 'compute-a', agentId: 'a', epoch: 0, seq: 4, devices: [forged] })).rejects.toThrow(/belongs to host compute-b/);
    expect(asked).toEqual([[handle.uuid]]);
  });

  it('refuses an unregistered host and one id twice, each under its reason', async () => {
    const d = door();
    const own = await new FakeDriver({ host: 'compute-a', gpus: 1, nics: 0 }).discover();
    await expect(d.admit({ host: 'compute-z', agentId: 'z', epoch: 0, seq: 1, devices: own })).rejects.toThrow(/has not registered/);
    await expect(d.admit({ host: 'compute-a', agentId: 'a', epoch: 0, seq: 1, devices: [own[0]!, own[0]!] })).rejects.toThrow(/reported twice/);
    expect(d.refused).toMatchObject({ unregistered_host: 1, duplicate_device: 1, foreign_device: 0 });
  });
});
