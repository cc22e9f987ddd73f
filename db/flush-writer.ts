import type { MikroORM } from '@mikro-orm/postgresql';
import { sql, type Kysely } from 'kysely';
import type { Pool, QueryConfig } from 'pg';
import type { DeviceT } from '../model/index.js';
import { hotPathStatement, pgQuery, writeHotPath, writeHotPathOnPool } from './hot-path.js';
import { inventoryRows } from './inventory-insert.js';
import { changedDevices, fingerprint, type Fingerprint } from './inventory-memo.js';
import { touchesModel, type MergedBatch } from './merge.js';
import { writeModel } from './model-writer.js';
import type { JournalStats } from './journal-types.js';
import type { DB } from './kysely-schema.js';

/**
 * One flush's SQL: the transaction that writes a merged batch, the look for its stamp after a
 * lost answer, and the memo of what each host's inventory is in the database.
 */
export class FlushWriter {
  /**
   * The last inventory committed per host, per device (inventory-memo.ts). Agents re-send their
   * full inventory on every discovery (60 s): an unchanged one is not written at all and a changed
   * one only diffs its changed devices — for a host with 10,000 deployables a full diff through the
   * unit of work costs seconds, and it would sit in the flush pipeline in front of every transition.
   * Held as the report itself until a comparison needs its fingerprint (see `committedInventory`).
   */
  readonly inventories = new Map<string, Fingerprint | DeviceT[]>();
  private pgPool: Promise<Pool> | undefined;

  constructor(
    private readonly orm: MikroORM,
    private readonly prepared: boolean,
    private readonly stats: Pick<JournalStats, 'modelFlushes'>,
  ) {}

  /** The ORM's Kysely on the pool (outside any unit of work), typed loosely for raw statements. */
  kysely(): Kysely<DB> {
    return this.orm.em.getKysely<DB>();
  }

  /** The `pg` pool under the ORM (the pipelined flush holds a connection across its predecessor's commit). */
  pool(): Promise<Pool> {
    return (this.pgPool ??= this.orm.em.getConnection().getNativeClient());
  }

  /** The pipelined path's one statement for `m` (null: nothing to write, only the order to keep). */
  pipelinedQuery(m: MergedBatch): QueryConfig | null {
    const st = hotPathStatement(m);
    return st ? pgQuery(st.compile(this.kysely()), this.prepared) : null;
  }

  /**
   * Does a report's CPU work now, while earlier flushes are in PostgreSQL, instead of inside the
   * flush that writes it (flushes are serial: that work would hold up every commit behind it):
   * its fingerprint when there is an earlier one to compare it with, and for a host with nothing
   * written yet its rows. Both are memoized per report.
   */
  prepare(host: string, devices: DeviceT[]): void {
    if (this.inventories.has(host)) fingerprint(devices);
    else inventoryRows(host, devices);
  }

  /**
   * One transaction: the model through the unit of work, the hot rows through batched SQL.
   * Returns the hot-path statements sent. Leaves `m` as it found it but for inventories that
   * the memo shows unchanged (dropped: a retry of the same batch would drop them again).
   */
  async write(m: MergedBatch): Promise<number> {
    const inventories = new Map<string, DeviceT[]>();
    for (const [host, devices] of m.inventories) {
      const prev = this.committedInventory(host);
      const changed = prev ? changedDevices(prev, fingerprint(devices)) : 'all';
      if (changed === null) {
        m.inventories.delete(host);
        continue;
      }
      if (changed !== 'all') m.inventoryScope.set(host, changed);
      inventories.set(host, devices);
    }
    if (!touchesModel(m) && m.accelerators.size === 0 && m.arqs.size === 0 && m.transitions.length === 0) return 0;
    let statements = 0;
    if (touchesModel(m)) {
      statements += 2; // BEGIN, COMMIT
      await this.orm.em.fork().transactional(async (em) => {
        await writeModel(em, m);
        statements += await writeHotPath(em.getKysely<DB>(), m);
      });
      this.stats.modelFlushes++;
    } else {
      statements += await writeHotPathOnPool(await this.pool(), this.kysely(), m, this.prepared);
    }
    for (const [host, devices] of inventories) this.inventories.set(host, devices);
    return statements;
  }

  /**
   * Whether the flush `m` is in the database: its stamped transition row is (a flush commits
   * whole). A flush without transitions only upserts rows, which writing again leaves as they are.
   */
  async alreadyCommitted(m: MergedBatch): Promise<boolean> {
    if (!m.stamp || m.transitions.length === 0) return false;
    const { rows } = await sql`select 1 from transition_log where flush = ${m.stamp}`.execute(this.kysely());
    if (rows.length === 0) return false;
    // What write() would have recorded: these reports are what the database holds now.
    for (const [host, devices] of m.inventories) this.inventories.set(host, devices);
    return true;
  }

  /**
   * The fingerprint of what is committed for `host`. Kept as the report itself until a later
   * report needs comparing (the host actor holds that array anyway): a fleet's cold start then
   * hashes nothing, and a conductor's restart hashes nothing until agents re-report.
   */
  private committedInventory(host: string): Fingerprint | undefined {
    const w = this.inventories.get(host);
    return Array.isArray(w) ? fingerprint(w) : w;
  }
}
