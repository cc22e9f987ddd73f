import type { MikroORM } from '@mikro-orm/postgresql';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Change, Journal, Recovered, TransitionRecord } from '../actors/journal.js';
import { CyborgError } from '../errors/index.js';
import { writeHotPath, writeHotPathAtomically } from './hot-path.js';
import { loadHistory, loadHostsState, loadRecovered } from './load.js';
import { changedDevices, fingerprint, type Fingerprint } from './inventory-memo.js';
import { mergeChanges, touchesModel } from './merge.js';
import { writeModel } from './model-writer.js';
import { isConnectionError } from './retry.js';

export interface PgJournalOptions {
  orm: MikroORM;
  log: Logger;
  /** How long a commit may wait for an unreachable database before it rejects (503). */
  unavailableAfterMs: number;
  /** Most commits taken into one flush. */
  maxBatch: number;
  /** Retry backoff, doubling from min to max. */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** Runs after the ORM is closed (the embedded database stops here). */
  afterClose?: () => Promise<void>;
}

interface Pending {
  changes: Change[];
  at: number;
  resolve: () => void;
  reject: (err: unknown) => void;
  /** Already answered with 503: still written when the database is back, but nobody waits. */
  settled: boolean;
}

/** What a flush did: read by the tests and the bench. */
export interface JournalStats {
  flushes: number;
  commits: number;
  transitions: number;
  /** Hot-path SQL statements sent, counting BEGIN and COMMIT (the unit of work's are not counted). */
  statements: number;
  /** Flushes that also wrote the model through the unit of work. */
  modelFlushes: number;
  retries: number;
}

/**
 * The conductor's journal on PostgreSQL: write-behind with group commit. `commit()` queues the
 * changes and resolves only after the transaction holding them committed. One flush runs at a
 * time; the next starts as soon as it ends and takes everything queued meanwhile (up to
 * `maxBatch` commits) in ONE transaction — an idle system pays one round trip, a busy one
 * batches by itself, with no fixed waiting window adding latency.
 *
 * While the database is unreachable a flush retries with backoff and keeps its batch and the
 * queue; commits older than `unavailableAfterMs` are answered with `persistence.unavailable`
 * (503) but stay queued and are written once the database is back, so nothing is dropped.
 */
export class PgJournal implements Journal {
  private queue: Pending[] = [];
  private inflight: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private sweeper: NodeJS.Timeout | null = null;
  private closed = false;
  /** When the first flush failed on the connection, since the last success (null: healthy). */
  private failingSince: number | null = null;
  /**
   * The last inventory committed per host, per device (inventory-memo.ts). Agents re-send their
   * full inventory on every discovery (60 s): an unchanged one is not written at all and a changed
   * one only diffs its changed devices — for a host with 10,000 deployables a full diff through the
   * unit of work costs seconds, and it would sit in the flush pipeline in front of every transition.
   */
  private readonly inventoryWritten = new Map<string, Fingerprint>();
  readonly stats: JournalStats = { flushes: 0, commits: 0, transitions: 0, statements: 0, modelFlushes: 0, retries: 0 };
  /** Called after each committed flush with its size and duration: the metrics hook. */
  onFlush: ((changes: number, seconds: number) => void) | undefined = undefined;

  constructor(private readonly opts: PgJournalOptions) {}

  commit(changes: Change[]): Promise<void> {
    if (this.closed) return Promise.reject(new CyborgError('service.shutting_down', 'the journal is closed'));
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ changes, at: Date.now(), resolve, reject, settled: false });
      this.kick();
    });
  }

  async load(): Promise<Recovered> {
    const recovered = await loadRecovered(this.opts.orm.em.fork());
    for (const h of recovered.hosts) this.inventoryWritten.set(h.host, fingerprint(h.devices));
    return recovered;
  }

  loadHosts(hosts: string[]): Promise<Pick<Recovered, 'hosts' | 'accelerators'>> {
    return loadHostsState(this.opts.orm.em.fork(), hosts);
  }

  async history(id: string, limit: number): Promise<TransitionRecord[]> {
    return loadHistory(this.opts.orm.em.fork(), id, limit);
  }

  /** Commits queued or in flight now (tests and metrics). */
  get pending(): number {
    return this.queue.length + this.inflight.length;
  }

  /** Flushes everything queued (waiting for the database if it must), then closes the ORM. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.flushing) await this.flushing;
    this.stopSweeper();
    await this.opts.orm.close();
    await this.opts.afterClose?.();
  }

  private kick(): void {
    this.startSweeper();
    if (this.flushing) return;
    this.flushing = this.pump().finally(() => {
      this.flushing = null;
      // A commit that arrived between the pump's last look at the queue and this callback
      // found a flush still "running" and did not start one: start it now.
      if (this.queue.length > 0) this.kick();
    });
  }

  private async pump(): Promise<void> {
    while (this.queue.length > 0) {
      this.inflight = this.queue.splice(0, this.opts.maxBatch);
      await this.flushWithRetry(this.inflight);
      this.inflight = [];
    }
    this.stopSweeper();
  }

  private async flushWithRetry(batch: Pending[]): Promise<void> {
    let delay = this.opts.retryMinMs ?? 50;
    for (let attempt = 0; ; attempt++) {
      try {
        const changes = batch.flatMap((p) => p.changes);
        const started = performance.now();
        await this.write(changes);
        this.onFlush?.(changes.length, (performance.now() - started) / 1000);
        this.stats.flushes++;
        this.stats.commits += batch.length;
        if (this.failingSince !== null) {
          this.opts.log.info({ attempts: attempt + 1, commits: batch.length, downMs: Date.now() - this.failingSince }, 'database reachable again: flush committed');
          this.failingSince = null;
        }
        for (const p of batch) if (!p.settled) { p.settled = true; p.resolve(); }
        return;
      } catch (err) {
        if (!isConnectionError(err)) return this.isolate(batch, err);
        this.stats.retries++;
        this.failingSince ??= Date.now();
        if (attempt === 0) this.opts.log.error({ err, commits: batch.length, queued: this.queue.length }, 'database unreachable: flush will be retried');
        await this.sleep(delay);
        delay = Math.min(delay * 2, this.opts.retryMaxMs ?? 2_000);
      }
    }
  }

  /**
   * A flush failed for a reason other than the connection (a constraint, a bug): retrying the
   * same batch would fail forever and block everyone, so each commit is retried alone and only
   * the one that fails is rejected.
   */
  private async isolate(batch: Pending[], err: unknown): Promise<void> {
    if (batch.length === 1) {
      const p = batch[0]!;
      this.opts.log.error({ err }, 'commit rejected by the database');
      if (!p.settled) { p.settled = true; p.reject(new CyborgError('persistence.unavailable', 'the database refused the change', {}, { cause: err })); }
      return;
    }
    for (const p of batch) await this.flushWithRetry([p]);
  }

  /** One transaction: the model through the unit of work, the hot rows through batched SQL. */
  private async write(changes: Change[]): Promise<void> {
    const m = mergeChanges(changes);
    const inventories = new Map<string, Fingerprint>();
    for (const [host, devices] of m.inventories) {
      const next = fingerprint(devices);
      const changed = changedDevices(this.inventoryWritten.get(host), next);
      if (changed === null) { m.inventories.delete(host); continue; }
      if (changed !== 'all') m.inventoryScope.set(host, changed);
      inventories.set(host, next);
    }
    if (!touchesModel(m) && m.accelerators.size === 0 && m.arqs.size === 0 && m.transitions.length === 0) return;
    let statements = 0;
    if (touchesModel(m)) {
      statements += 2; // BEGIN, COMMIT
      await this.opts.orm.em.fork().transactional(async (em) => {
        await writeModel(em, m);
        statements += await writeHotPath(em.getKysely() as unknown as Kysely<object>, m);
      });
      this.stats.modelFlushes++;
    } else {
      statements += await writeHotPathAtomically(this.opts.orm.em.getKysely() as unknown as Kysely<object>, m);
    }
    for (const [host, fp] of inventories) this.inventoryWritten.set(host, fp);
    this.stats.statements += statements;
    this.stats.transitions += m.transitions.length;
  }

  /**
   * Answers commits that waited too long with 503 while the database is unreachable (a flush
   * failed on the connection and none has succeeded since); they stay queued. A database that is
   * merely slow is waited for: its answers come, and a 503 would only hide a commit that will land.
   */
  private startSweeper(): void {
    if (this.sweeper) return;
    const every = Math.max(10, Math.min(500, Math.floor(this.opts.unavailableAfterMs / 4)));
    this.sweeper = setInterval(() => {
      if (this.failingSince === null) return;
      const limit = Date.now() - this.opts.unavailableAfterMs;
      for (const p of [...this.inflight, ...this.queue]) {
        if (p.settled || p.at > limit) continue;
        p.settled = true;
        p.reject(new CyborgError('persistence.unavailable',
          `the database has been unreachable for ${Date.now() - this.failingSince} ms; the change is kept and will be written when it is back`));
      }
    }, every);
    this.sweeper.unref();
  }

  private stopSweeper(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}
