import { expect } from 'vitest';
import type { RemoteControlPlane } from '../../control/client.js';
import { query } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { leakedAllocations, viewDiffersFromDb } from '../support/view-equals-db.js';

/** What Nova was told: 201 for these creates, 204 for these deletes, and which deletes it sent at all. */
export interface Acks {
  created: Set<string>;
  deleted: Set<string>;
  deleteSent: Set<string>;
}

/**
 * Nova workers cycling ARQs (create, bind, delete) on one accelerator each, whatever each step
 * answers, until `stop()`; `cycles()` counts the cycles finished.
 */
export function novaLoad(api: RemoteControlPlane, host: string, rps: string[]): { acks: Acks; cycles: () => number; stop: () => Promise<void> } {
  const acks: Acks = { created: new Set(), deleted: new Set(), deleteSent: new Set() };
  let stopped = false;
  let n = 0;
  const worker = async (rpUuid: string, w: number): Promise<void> => {
    for (let i = 0; !stopped; i++) {
      let uuid: string;
      try {
        uuid = (await api.createArq({ deviceProfileName: 'p', deviceProfileGroupId: 0, projectId: 'p1' })).uuid;
        acks.created.add(uuid);
      } catch {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      await api.bindArq(uuid, { hostname: host, deviceRpUuid: rpUuid, instanceUuid: `vm-${w}-${i}` }).catch(() => undefined);
      acks.deleteSent.add(uuid);
      try {
        await api.deleteArq(uuid);
        acks.deleted.add(uuid);
      } catch {
        /* not acknowledged: it may or may not have happened */
      }
      n++;
    }
  };
  const all = Promise.all(rps.map((rp, w) => worker(rp, w)));
  return {
    acks,
    cycles: () => n,
    stop: async () => {
      stopped = true;
      await all;
    },
  };
}

/**
 * The end state every fault story checks: each acknowledged create whose delete was never sent
 * is in the database, each acknowledged delete is done, no accelerator holds a handle for an ARQ
 * that is gone, and the api's view equals the database.
 */
export async function nothingAcknowledgedUndone(api: RemoteControlPlane, databaseUrl: string, acks: Acks): Promise<void> {
  const rows = async (): Promise<Set<string>> =>
    new Set((await query<{ uuid: string }>(databaseUrl, 'select uuid from extended_accelerator_requests')).map((r) => r.uuid));
  const mustStay = [...acks.created].filter((u) => !acks.deleteSent.has(u));
  await eventually(
    async () => {
      const present = await rows();
      return mustStay.every((u) => present.has(u)) && [...acks.deleted].every((u) => !present.has(u));
    },
    { what: 'every acknowledged create present and every acknowledged delete done', timeoutMs: 90_000 },
  );
  expect(acks.deleted.size).toBeGreaterThan(0);
  await eventually(
    async () => {
      const leaks = await leakedAllocations(databaseUrl);
      if (leaks.length > 0) throw new Error(leaks.join('; '));
      return true;
    },
    { what: 'no handle held for a gone ARQ', timeoutMs: 60_000 },
  );
  // Waited for, then compared: a view still apart fails with the differences, not a timeout.
  await eventually(async () => (await viewDiffersFromDb(api, databaseUrl)).length === 0, {
    what: "the api's view equal to the database",
    timeoutMs: 30_000,
  }).catch(() => undefined);
  expect(await viewDiffersFromDb(api, databaseUrl)).toEqual([]);
}
