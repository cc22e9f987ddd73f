import type { AcceleratorRecord, ArqRecord, Change, HostRecord } from '../actors/runtime/index.js';
import type { DeviceT, TransitionRecord } from '../model/index.js';

/** One flush's worth of changes, coalesced: the last write of each row wins, the log keeps all. */
export interface MergedBatch {
  hosts: Map<string, { record: HostRecord; drivers: { name: string; version: string }[] }>;
  inventories: Map<string, DeviceT[]>;
  /** Per host: only these devices (control-path infos) changed; a host not here is diffed whole. */
  inventoryScope: Map<string, Set<string>>;
  accelerators: Map<string, { host: string; record: AcceleratorRecord }>;
  arqs: Map<string, { record: ArqRecord; deleted: boolean }>;
  documents: Map<string, { collection: string; id: string; body: Record<string, unknown> | null }>;
  transitions: TransitionRecord[];
  /** The flush's id, stamped on its last transition row (see PgJournal's `alreadyCommitted`). */
  stamp?: string;
}

/**
 * Coalesces the changes of one flush in commit order: several changes of one accelerator (or
 * host, ARQ, document) become one row write with the latest record, while every transition
 * stays its own audit row. Pure, so the coalescing rule is tested without a database.
 */
export function mergeChanges(changes: Iterable<Change>): MergedBatch {
  const m: MergedBatch = {
    hosts: new Map(),
    inventories: new Map(),
    inventoryScope: new Map(),
    accelerators: new Map(),
    arqs: new Map(),
    documents: new Map(),
    transitions: [],
  };
  for (const c of changes) {
    switch (c.type) {
      case 'host':
        m.hosts.set(c.host, { record: c.record, drivers: c.drivers });
        break;
      case 'inventory':
        m.inventories.set(c.host, c.devices);
        break;
      case 'accelerator':
        m.accelerators.set(c.id, { host: c.host, record: c.record });
        break;
      case 'arq':
        m.arqs.set(c.uuid, { record: c.record, deleted: c.deleted });
        break;
      case 'transition':
        m.transitions.push(c.record);
        break;
      case 'document':
        m.documents.set(`${c.collection}\u0000${c.id}`, { collection: c.collection, id: c.id, body: c.body });
        break;
    }
  }
  return m;
}

/** True when the batch touches the model (written through the unit of work), not only hot rows. */
export function touchesModel(m: MergedBatch): boolean {
  return m.hosts.size > 0 || m.inventories.size > 0 || m.documents.size > 0;
}

/** JSON with object keys sorted: equal reports give equal strings whatever their key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
