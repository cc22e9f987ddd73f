import type { MikroORM } from '@mikro-orm/postgresql';
import { sql } from 'kysely';
import type { Recovered } from '../actors/runtime/index.js';
import type { AuditPage, AuditQuery, TransitionRecord } from '../model/index.js';
import { queryAudit } from './audit.js';
import type { FlushWriter } from './flush-writer.js';
import { recordedHolders } from './holders.js';
import { loadArqs, loadDocuments, loadHistory, loadHostsState, loadRecovered } from './load.js';
import { pruneLog, type Retention } from './retention.js';

/**
 * The journal's reads: what the conductor rebuilds from, history, the audit log, retention, the
 * committed states the report door and the recovery check compare with. They run on the pool
 * beside the flushes and never wait for one; each load also sets the writer's memo of committed
 * inventories, so that a report is diffed against what the database holds.
 */
export class JournalReads {
  constructor(
    protected readonly orm: MikroORM,
    protected readonly writer: FlushWriter,
  ) {}

  async load(): Promise<Recovered> {
    const recovered = await loadRecovered(this.orm.em.fork());
    for (const h of recovered.hosts) this.writer.inventories.set(h.host, h.devices);
    return recovered;
  }

  /** What a conductor that becomes the ARQ home reads (see arq-home.ts). */
  loadArqs(): Promise<Recovered['arqs']> {
    return loadArqs(this.orm.em.fork());
  }

  loadDocuments(): Promise<Recovered['documents']> {
    return loadDocuments(this.orm.em.fork());
  }

  /**
   * What a takeover rebuilds from. The previous owner may have written these hosts' inventories
   * since our start: the memo of what is committed follows the database, or an agent's next
   * report could be skipped as "unchanged" against an inventory that is no longer there.
   */
  async loadHosts(hosts: string[]): Promise<Pick<Recovered, 'hosts' | 'accelerators'>> {
    const state = await loadHostsState(this.orm.em.fork(), hosts);
    for (const h of hosts) this.writer.inventories.delete(h);
    for (const h of state.hosts) this.writer.inventories.set(h.host, h.devices);
    return state;
  }

  async history(id: string, limit: number): Promise<TransitionRecord[]> {
    return loadHistory(this.orm.em.fork(), id, limit);
  }

  /** The audit log's pages (db/audit.ts), read on the pool beside the flushes. */
  audit(q: AuditQuery): Promise<AuditPage> {
    return queryAudit(this.writer.kysely(), q);
  }

  /** One retention pass now (what the periodic one does): deletes the oldest rows beyond `r`, returns how many. */
  prune(r: Pick<Retention, 'maxAgeMs' | 'maxRows'>): Promise<number> {
    return pruneLog(this.writer.kysely(), r);
  }

  /** Journal.committedStates: two reads on the pool, beside the flushes. */
  async committedStates(): Promise<{ accelerators: [string, string][]; arqs: [string, string][] }> {
    const db = this.writer.kysely();
    const [accs, arqs] = await Promise.all([
      sql<{ id: string; state: string }>`select id, state from accelerators`.execute(db),
      sql<{ uuid: string; state: string }>`select uuid, machine_state as state from extended_accelerator_requests`.execute(db),
    ]);
    return { accelerators: accs.rows.map((r) => [r.id, r.state]), arqs: arqs.rows.map((r) => [r.uuid, r.state]) };
  }

  /** The host each of `ids` is recorded on (db/holders.ts): the report door's question. */
  recordedHolders(ids: readonly string[]): Promise<Map<string, string>> {
    return recordedHolders(this.writer.kysely(), ids);
  }
}
