import type { EntityManager } from '@mikro-orm/postgresql';
import type { MergedBatch } from './merge.js';
import { Device, type IDevice } from './entities/inventory.js';
import { Document, DeviceProfile, Driver, Host, type IHost } from './entities/state.js';
import { diffInventory } from './inventory-diff.js';
import { insertInventories } from './inventory-insert.js';

/**
 * The rarely changing part of a flush — hosts and their drivers, inventories, device profiles
 * and generic documents — written through MikroORM's unit of work: entities are loaded, changed
 * and flushed once, so the model keeps the ORM's identity map, ordering of inserts/deletes by
 * foreign key and change sets. Runs inside the flush's transaction (`em` is the transactional fork).
 */
export async function writeModel(em: EntityManager, m: MergedBatch): Promise<void> {
  await writeHosts(em, m);
  // Hosts with no rows yet are inserted in bulk, all together; the others are diffed one by one.
  const hosts = [...m.inventories.keys()];
  const known = new Set(hosts.length === 0 ? [] : (await em.execute<{ hostname: string }[]>(
    `select distinct hostname from devices where hostname in (${hosts.map(() => '?').join(', ')})`, hosts)).map((r) => r.hostname));
  await insertInventories(em, hosts.filter((h) => !known.has(h)).map((host) => ({ host, devices: m.inventories.get(host)! })));
  for (const [host, devices] of m.inventories) {
    if (!known.has(host)) continue;
    const scope = m.inventoryScope.get(host);
    const where = scope ? { hostname: host, controlpathIds: { cpidInfo: { $in: [...scope] } } } : { hostname: host };
    const existing = await em.find(Device, where, {
      populate: ['controlpathIds', 'deployables.attributes', 'deployables.attachHandles'],
    });
    diffInventory(em, host, existing as IDevice[], devices, scope);
  }
  await writeDocuments(em, m);
  await em.flush();
}

async function writeHosts(em: EntityManager, m: MergedBatch): Promise<void> {
  if (m.hosts.size === 0) return;
  const names = [...m.hosts.keys()];
  const rows = await em.find(Host, { name: { $in: names } }, { populate: ['drivers'] });
  const byName = new Map<string, IHost>(rows.map((h) => [h.name, h as IHost]));
  for (const [name, change] of m.hosts) {
    const agentId = (change.record.context.agentId as string | null | undefined) ?? null;
    let host = byName.get(name);
    if (!host) {
      host = em.create(Host, { name, state: change.record.value, context: change.record.context, agentId }) as IHost;
    } else {
      host.state = change.record.value;
      host.context = change.record.context;
      host.agentId = agentId;
    }
    const wanted = new Map(change.drivers.map((d) => [d.name, d.version]));
    for (const d of [...host.drivers]) {
      const version = wanted.get(d.name);
      if (version === undefined) em.remove(d);
      else if (d.version !== version) d.version = version;
      wanted.delete(d.name);
    }
    for (const [dname, version] of wanted) em.create(Driver, { host, name: dname, version, state: 'installed' });
  }
}

/** `device_profiles` documents map to Cyborg's table; other collections to the generic one. */
async function writeDocuments(em: EntityManager, m: MergedBatch): Promise<void> {
  for (const doc of m.documents.values()) {
    if (doc.collection === 'device_profiles') {
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
      continue;
    }
    const row = await em.findOne(Document, { collection: doc.collection, id: doc.id });
    if (doc.body === null) {
      if (row) em.remove(row);
    } else if (row) {
      row.body = doc.body;
    } else {
      em.create(Document, { collection: doc.collection, id: doc.id, body: doc.body });
    }
  }
}
