import type { EntityManager } from '@mikro-orm/postgresql';
import type { MergedBatch } from './merge.js';
import { Device, type IDevice } from './entities/inventory.js';
import { DeviceProfile } from './entities/state.js';
import { diffInventory } from './inventory-diff.js';
import { insertInventories } from './inventory-insert.js';
import { writeDocumentRows, writeHostRows } from './model-sql.js';
import type { DB } from './kysely-schema.js';

/**
 * The rarely changing part of a flush — hosts and their drivers, inventories, device profiles
 * and generic documents. Changes to known inventories and device profiles go through MikroORM's
 * unit of work: entities are loaded, changed and flushed once, so they keep the ORM's identity
 * map, ordering of inserts/deletes by foreign key and change sets. What every agent registration
 * writes — host and driver rows, documents, a new host's whole inventory — is bulk SQL (see
 * model-sql.ts and inventory-insert.ts for why). Runs inside the flush's transaction
 * (`em` is the transactional fork, and its Kysely is bound to the same connection).
 */
export async function writeModel(em: EntityManager, m: MergedBatch): Promise<void> {
  const db = em.getKysely<DB>();
  await writeHostRows(db, m);
  // Hosts with no rows yet are inserted in bulk, all together; the others are diffed one by one.
  const hosts = [...m.inventories.keys()];
  const known = new Set(
    hosts.length === 0
      ? []
      : (await em.execute<{ hostname: string }[]>(`select distinct hostname from devices where hostname in (${hosts.map(() => '?').join(', ')})`, hosts)).map(
          (r) => r.hostname,
        ),
  );
  await insertInventories(
    db,
    hosts.filter((h) => !known.has(h)).map((host) => ({ host, devices: m.inventories.get(host)! })),
  );
  for (const [host, devices] of m.inventories) {
    if (!known.has(host)) continue;
    const scope = m.inventoryScope.get(host);
    const where = scope ? { hostname: host, controlpathIds: { cpidInfo: { $in: [...scope] } } } : { hostname: host };
    const existing = await em.find(Device, where, {
      populate: ['controlpathIds', 'deployables.attributes', 'deployables.attachHandles'],
    });
    diffInventory(em, host, existing as IDevice[], devices, scope);
  }
  await writeDocumentRows(db, m);
  await writeDeviceProfiles(em, m);
  await em.flush();
}

/** `device_profiles` documents map to Cyborg's table (other collections: model-sql.ts). */
async function writeDeviceProfiles(em: EntityManager, m: MergedBatch): Promise<void> {
  for (const doc of m.documents.values()) {
    if (doc.collection !== 'device_profiles') continue;
    const row = await em.findOne(DeviceProfile, { uuid: doc.id });
    if (doc.body === null) {
      if (row) em.remove(row);
      continue;
    }
    const b = doc.body as { name: string; description?: string | null; groups?: unknown[]; createdAt?: string; updatedAt?: string | null };
    const fields = { name: b.name, description: b.description ?? null, profileJson: JSON.stringify({ groups: b.groups ?? [] }) };
    if (row) {
      em.assign(row, fields);
    } else {
      // A profile never updated keeps updated_at = created_at; load() reads that back as null.
      const createdAt = b.createdAt ? new Date(b.createdAt) : new Date();
      em.create(DeviceProfile, { uuid: doc.id, ...fields, createdAt, updatedAt: b.updatedAt ? new Date(b.updatedAt) : createdAt });
    }
  }
}
