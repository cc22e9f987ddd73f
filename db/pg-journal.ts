import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { sql, type Kysely } from 'kysely';
import { recordedHolders } from './holders.js';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Change, CommitOptions, Journal, Recovered } from '../actors/runtime/index.js';
import { CyborgError, refusalText } from '../errors/index.js';
import { Answers } from './answers.js';
import { Flight, PipelineFailure, writePipelined } from './flight.js';
import { hotPathStatement, pgQuery, writeHotPath, writeHotPathOnPool } from './hot-path.js';
import { loadArqs, loadDocuments, loadHistory, loadHostsState, loadRecovered } from './load.js';
import { changedDevices, fingerprint, type Fingerprint } from './inventory-memo.js';
import { inventoryRows } from './inventory-insert.js';
import { mergeChanges, touchesModel, type MergedBatch } from './merge.js';
import { writeModel } from './model-writer.js';
import { checkChanges } from './bounds.js';
import { queryAudit } from './audit.js';
import { pruneLog, startRetention, type Retention } from './retention.js';
import { classifyFailure, isConnectionError, mayHaveCommitted, sqlState } from './retry.js';
import type { AuditPage, AuditQuery, DeviceT, TransitionRecord } from '../model/index.js';

export interface PgJournalOptions {
  orm: MikroORM;
  log: Logger;
  /** How long a commit may wait for an unreachable database before it rejects (503). */
  unavailableAfterMs: number;
  /**
   * How long the database must have been unreachable before the journal says so: from then on
   * every waiting commit and every new one is answered 503 at once and dropped (never written),
   * and `available` is false. Default: 1 s, at most `unavailableAfterMs`.
   */
  downAfterMs?: number;
  /**
   * How long `close()` waits for queued commits while the database is unreachable; then it stops
   * retrying and answers them `service.shutting_down` (a stop must not hang on a dead database).
   * Default 10 s.
   */
  closeTimeoutMs?: number;
  /** Most commits taken into one flush. */
  maxBatch: number;
  /** Retry backoff, doubling from min to max. */
  retryMinMs?: number;
  retryMaxMs?: number;
  /**
   * Flushes open at once (default 2): the next flush sends its statements while the previous
   * one commits, on another pooled connection. 1 is the strictly serial group commit (the
   * embedded database has one connection). Capped at the ORM's pool size.
   */
  pipeline?: number;
  /**
   * Hot-path statements are named prepared statements (default true): each connection parses and
   * plans each shape once. False behind a pooler that cannot keep them across transactions, and on
   * the embedded database (its one session outlives the pool's connections).
   */
  preparedStatements?: boolean;
  /** Runs after the ORM is closed (the embedded database stops here). */
  afterClose?: () => Promise<void>;
  /** How much of the transition log is kept (db/retention.ts); absent: all of it. */
  retention?: Retention;
  /**
   * The longest a deferred commit (`commit(changes, { defer: true })`) waits for a commit that
   * is not deferred to take it along; then it is written on its own. Default 500 ms.
   */
  deferMaxMs?: number;
}

interface Pending {
  changes: Change[];
  at: number;
  resolve: () => void;
  reject: (err: unknown) => void;
  /** Answered (acknowledged, refused, or 503). */
  settled: boolean;
  /**
   * Answered 503 while the database was away: never written. Taken out of the queue at once; in
   * a flush that was under way it is left out when that flush is redone (see `flushWithRetry`).
   */
  dropped: boolean;
  /**
   * It may be in the database: its flush is being written, or failed in a way that leaves the
   * outcome open (the connection broke after the COMMIT or the statement went out). Never answered
   * 503 — its fate is known only from the database — until a look at it says it is not there.
   */
  unsure: boolean;
  /** A flush was open when this commit arrived: the journal is busy, worth pipelining. */
  busy: boolean;
  /** Starts no flush by itself: it rides with the next commit that does (see `CommitOptions`). */
  deferred: boolean;
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
  /** Flushes committed on the pipelined path (BEGIN / statement / COMMIT, beside their predecessor). */
  pipelined: number;
  retries: number;
  /** Commits answered 503 and left out: not written (docs/persistence.md, "503 means not done"). */
  dropped: number;
  /**
   * Commits answered 503 that had committed after all: their flush's COMMIT went out before the
   * connection broke and its answer was lost. The conductor is told (`onLanded`) and takes them.
   */
  landedAfterRefusal: number;
}

/**
 * The conductor's journal on PostgreSQL: write-behind with group commit. `commit()` queues the
 * changes and resolves only after the transaction holding them — and every earlier flush —
 * committed. A flush takes everything queued (up to `maxBatch` commits) into ONE transaction:
 * an idle system pays one round trip, a busy one batches by itself, with no fixed waiting
 * window adding latency.
 *
 * Under load, flushes are pipelined (`pipeline`, default 2 open at once): while flush N
 * commits, flush N+1 already runs its statement on another pooled connection. Order is kept by
 * row locks: N+1 sends its statement only once N's has run (N holds its locks, so N+1 waits
 * behind them in PostgreSQL, and its log rows draw later serial ids), and sends its COMMIT only
 * once N's COMMIT succeeded — so acks follow commit order, and a crash never keeps a later
 * commit while losing an earlier one. If N fails, N+1 is rolled back and both are redone in
 * order, one at a time. A flush that writes the model, or the first one after an idle spell
 * (one statement of data-modifying CTEs, one round trip), runs alone: it waits for its
 * predecessor to be done, and its successor waits for it.
 *
 * Acks are handed out in commit order, a few dozen per turn of the event loop (answers.ts),
 * so the callers' next commits reach the next flush while later callers still work.
 *
 * While the database is unreachable a flush retries with backoff, for as long as it takes; once
 * it has been unreachable for `downAfterMs` (or a commit has waited `unavailableAfterMs`), waiting
 * and new commits are answered `persistence.unavailable` (503) at once and dropped: 503 means not
 * done (see `sweep`). A commit that may already be in the database (its flush was on the wire
 * when the connection broke) is never answered 503: it waits for the database to say whether it
 * landed. Nothing is acknowledged before it is committed. Only outages are retried (retry.ts): a
 * batch the database refuses for its data is split until the bad commits fail alone (`isolate`),
 * and a change it could never store is refused before it is queued (bounds.ts).
 *
 * No promise of the journal is left without a handler: answers go through `answers` in commit
 * order, and a caller that drops its commit's promise cannot crash the process with it.
 */
export class PgJournal implements Journal {
  private queue: Pending[] = [];
  /** Flushes started and not yet done, oldest first. */
  private open: Flight<Pending>[] = [];
  private flushing: Promise<void> | null = null;
  /** Wakes the pump when a commit arrives while it waits on an open flush. */
  private arrival: { promise: Promise<void>; resolve: () => void } | null = null;
  private sweeper: NodeJS.Timeout | null = null;
  /** Writes deferred commits that waited `deferMaxMs` for company (see `promoteDeferred`). */
  private deferTimer: NodeJS.Timeout | null = null;
  private readonly deferMaxMs: number;
  private closed = false;
  /** `close()` gave up on an unreachable database: batches are answered, no longer retried. */
  private abandoned = false;
  /** Wakes a flush sleeping between retries (`close()` gave up). */
  private readonly sleepers = new Set<() => void>();
  private readonly downAfterMs: number;
  private readonly depth: number;
  private pgPool: Promise<Pool> | undefined;
  /** Acks (and refusals) of finished flushes, handed out in commit order, in turns (answers.ts). */
  private readonly answers = new Answers();
  /** When the first flush failed on the connection, since the last success (null: healthy). */
  private failingSince: number | null = null;
  /**
   * The last inventory committed per host, per device (inventory-memo.ts). Agents re-send their
   * full inventory on every discovery (60 s): an unchanged one is not written at all and a changed
   * one only diffs its changed devices — for a host with 10,000 deployables a full diff through the
   * unit of work costs seconds, and it would sit in the flush pipeline in front of every transition.
   * Held as the report itself until a comparison needs its fingerprint (see `written`).
   */
  private readonly inventoryWritten = new Map<string, Fingerprint | DeviceT[]>();
  /** This journal's flushes' ids: `<instance>:<n>`, stamped on each flush's last transition row. */
  private readonly instance = randomUUID();
  private flushSeq = 0;
  readonly stats: JournalStats = {
    flushes: 0,
    commits: 0,
    transitions: 0,
    statements: 0,
    modelFlushes: 0,
    pipelined: 0,
    retries: 0,
    dropped: 0,
    landedAfterRefusal: 0,
  };
  /** Called after each committed flush with its size and duration: the metrics hook. */
  onFlush: ((changes: number, seconds: number) => void) | undefined = undefined;
  /** Journal.onLanded: changes answered 503 that turned out committed (set by the conductor). */
  onLanded: ((changes: Change[]) => void) | undefined = undefined;
  /** Looks for the database while it is away and nothing is being retried (see `watchForReturn`). */
  private returnWatch: NodeJS.Timeout | null = null;

  constructor(private readonly opts: PgJournalOptions) {
    // Each open flush holds a connection until it commits: more than the pool would only queue.
    const pool = (opts.orm.config.get('pool') as { max?: number } | undefined)?.max ?? 1;
    this.depth = Math.max(1, Math.min(opts.pipeline ?? 2, pool));
    this.downAfterMs = Math.min(opts.downAfterMs ?? 1_000, opts.unavailableAfterMs);
    this.deferMaxMs = opts.deferMaxMs ?? 500;
    this.stopRetention = opts.retention ? startRetention(this.kysely(), opts.retention, opts.log) : async () => {};
  }

  /** Stops the periodic delete of the log's oldest rows (db/retention.ts). */
  private readonly stopRetention: () => Promise<void>;

  /**
   * Queues `changes` as one transaction; resolves once it committed. Refused at once, without
   * being queued, when a value cannot be stored (`persistence.invalid_value`, 400) or the journal
   * is closed. While the database is down the commit is queued and answered 503 at once.
   *
   * A deferred commit starts no flush: the next commit that does takes it into its transaction
   * (a Nova bind's `BindStarted`, `attaching` and `attached` ride with its `Bound`: one
   * transaction, one round trip, instead of two transactions and four round trips), and one that
   * waits `deferMaxMs` without company is written on its own.
   */
  commit(changes: Change[], opts?: CommitOptions): Promise<void> {
    let refused: CyborgError | undefined;
    if (this.closed) refused = new CyborgError('service.shutting_down', 'the journal is closed');
    else {
      try {
        checkChanges(changes);
      } catch (err) {
        refused = err instanceof CyborgError ? err : new CyborgError('persistence.invalid_value', String(err));
        this.opts.log.warn({ err: refused.message, field: refused.details.field }, 'change refused before it was queued');
      }
    }
    const answer = refused
      ? Promise.reject(refused)
      : new Promise<void>((resolve, reject) => {
          for (const c of changes) if (c.type === 'inventory') this.prepare(c.host, c.devices);
          const deferred = opts?.defer === true;
          this.queue.push({ changes, at: Date.now(), resolve, reject, settled: false, dropped: false, unsure: false, busy: this.open.length > 0, deferred });
          if (this.down()) this.sweep(0);
          if (deferred) this.armDeferred();
          else this.kick();
        });
    // Marked handled for callers that drop it (a system transition nobody awaits): a 503 must
    // not become an unhandled rejection that takes the process down. Whoever awaits it still
    // gets the rejection.
    answer.catch(() => undefined);
    return answer;
  }

  /** Whether the database answers: false once it has been unreachable for `downAfterMs`. */
  get available(): boolean {
    return !this.down();
  }

  /** The readiness check's text: undefined when the database answers. */
  readiness(): string | undefined {
    if (!this.down()) return undefined;
    return `database unreachable for ${Math.round((Date.now() - this.failingSince!) / 1000)} s; changes are refused (503, not made) until it is back`;
  }

  /**
   * The readiness check that also sees a database that hangs (a partition: no error, no answer):
   * a round trip that must come back within `deadlineMs`. Undefined when it does.
   */
  async probe(deadlineMs: number): Promise<string | undefined> {
    const known = this.readiness();
    if (known) return known;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((r) => {
      timer = setTimeout(() => r(`database did not answer a probe within ${deadlineMs} ms; commits are waiting`), deadlineMs);
    });
    const answered = sql`select 1`.execute(this.kysely()).then(
      () => undefined,
      (err: unknown) => `database probe failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
    try {
      return await Promise.race([answered, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private down(): boolean {
    return this.failingSince !== null && Date.now() - this.failingSince >= this.downAfterMs;
  }

  /**
   * Does a report's CPU work now, while earlier flushes are in PostgreSQL, instead of inside the
   * flush that writes it (flushes are serial: that work would hold up every commit behind it):
   * its fingerprint when there is an earlier one to compare it with, and for a host with nothing
   * written yet its rows. Both are memoized per report.
   */
  private prepare(host: string, devices: DeviceT[]): void {
    if (this.inventoryWritten.has(host)) fingerprint(devices);
    else inventoryRows(host, devices);
  }

  /**
   * The fingerprint of what is committed for `host`. Kept as the report itself until a later
   * report needs comparing (the host actor holds that array anyway): a fleet's cold start then
   * hashes nothing, and a conductor's restart hashes nothing until agents re-report.
   */
  private written(host: string): Fingerprint | undefined {
    const w = this.inventoryWritten.get(host);
    return Array.isArray(w) ? fingerprint(w) : w;
  }

  async load(): Promise<Recovered> {
    const recovered = await loadRecovered(this.opts.orm.em.fork());
    for (const h of recovered.hosts) this.inventoryWritten.set(h.host, h.devices);
    return recovered;
  }

  /** What a conductor that becomes the ARQ home reads (see arq-home.ts). */
  loadArqs(): Promise<Recovered['arqs']> {
    return loadArqs(this.opts.orm.em.fork());
  }

  loadDocuments(): Promise<Recovered['documents']> {
    return loadDocuments(this.opts.orm.em.fork());
  }

  /**
   * What a takeover rebuilds from. The previous owner may have written these hosts' inventories
   * since our start: the memo of what is committed follows the database, or an agent's next
   * report could be skipped as "unchanged" against an inventory that is no longer there.
   */
  async loadHosts(hosts: string[]): Promise<Pick<Recovered, 'hosts' | 'accelerators'>> {
    const state = await loadHostsState(this.opts.orm.em.fork(), hosts);
    for (const h of hosts) this.inventoryWritten.delete(h);
    for (const h of state.hosts) this.inventoryWritten.set(h.host, h.devices);
    return state;
  }

  /** Journal.forgetHost: the host's rows go in one transaction once what was queued before is written. */
  async forgetHost(host: string): Promise<void> {
    await this.commit([]);
    await this.opts.orm.em.fork().transactional(async (em) => {
      // controlpath_ids restrict the delete of their device; attach handles go with them (cascade).
      await em.execute('delete from controlpath_ids where device_id in (select id from devices where hostname = ?)', [host]);
      await em.execute('delete from devices where hostname = ?', [host]);
      await em.execute('delete from accelerators where host = ?', [host]);
      await em.execute('delete from hosts where name = ?', [host]);
    });
    this.inventoryWritten.delete(host);
  }

  async history(id: string, limit: number): Promise<TransitionRecord[]> {
    return loadHistory(this.opts.orm.em.fork(), id, limit);
  }

  /** The audit log's pages (db/audit.ts), read on the pool beside the flushes. */
  audit(q: AuditQuery): Promise<AuditPage> {
    return queryAudit(this.kysely(), q);
  }

  /** One retention pass now (what the periodic one does): deletes the oldest rows beyond `r`, returns how many. */
  prune(r: Pick<Retention, 'maxAgeMs' | 'maxRows'>): Promise<number> {
    return pruneLog(this.kysely(), r);
  }

  /** Commits queued or in flight now (tests and metrics). */
  get pending(): number {
    return this.queue.length + this.open.reduce((n, f) => n + f.batch.length, 0);
  }

  /**
   * Flushes everything queued, waiting for an unreachable database up to `closeTimeoutMs`: then
   * the commits still waiting are answered `service.shutting_down` (none of them was
   * acknowledged) and the ORM is closed — a stop never hangs on a database that stays away.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Nothing comes after: what was deferred is written now.
    for (const p of this.queue) p.deferred = false;
    this.clearDeferTimer();
    if (this.queue.length > 0) this.kick();
    const giveUp = setTimeout(() => this.abandon(), this.opts.closeTimeoutMs ?? 10_000);
    giveUp.unref();
    try {
      while (this.flushing) await this.flushing;
    } finally {
      clearTimeout(giveUp);
    }
    this.answers.flushAll();
    this.stopSweeper();
    this.stopReturnWatch();
    await this.stopRetention();
    await this.opts.orm.close();
    await this.opts.afterClose?.();
  }

  private abandon(): void {
    if (this.failingSince === null) return; // the database answers: the flushes end by themselves
    this.opts.log.error({ pending: this.pending }, 'closing: the database is still unreachable; unwritten commits are dropped');
    this.abandoned = true;
    for (const wake of this.sleepers) wake();
  }

  private kick(): void {
    this.startSweeper();
    if (this.flushing) {
      this.arrival?.resolve();
      return;
    }
    this.flushing = this.pump().finally(() => {
      this.flushing = null;
      // A commit that arrived between the pump's last look at the queue and this callback
      // found a flush still "running" and did not start one: start it now.
      if (this.hasWork()) this.kick();
    });
  }

  /**
   * Starts flushes while there is work: a new one once the newest has executed (or ended, or
   * been redone after a failure) and fewer than `depth` are open; ends when the queue holds
   * nothing but deferred commits and every flush is done.
   */
  private async pump(): Promise<void> {
    for (;;) {
      const newest = this.open.at(-1);
      let wait: Promise<unknown>;
      if (!this.hasWork()) {
        if (!newest) break;
        wait = Promise.race([newest.done.promise, this.nextArrival()]);
      } else if (newest && !newest.executed.isSet) {
        wait = newest.executed.promise;
      } else if (newest?.failed) {
        wait = newest.done.promise; // it is being redone alone: nothing may run beside it
      } else if (this.open.length >= this.depth) {
        wait = this.open[0]!.done.promise;
      } else {
        this.launch(this.queue.splice(0, this.opts.maxBatch), newest ?? null);
        continue;
      }
      await wait;
    }
    this.stopSweeper();
  }

  /** Whether a commit that is not deferred waits (a flush takes the deferred ones before it along). */
  private hasWork(): boolean {
    return this.queue.some((p) => !p.deferred);
  }

  /** Makes sure a deferred commit is written within `deferMaxMs` even if no other commit comes. */
  private armDeferred(): void {
    if (this.deferTimer || this.closed) return;
    this.deferTimer = setTimeout(() => this.promoteDeferred(), this.deferMaxMs);
    this.deferTimer.unref();
  }

  /**
   * The timer: deferred commits that have waited `deferMaxMs` are written now (with every
   * deferred one before them: order is kept); the timer is set again for the next one due.
   */
  private promoteDeferred(): void {
    this.deferTimer = null;
    const due = Date.now() - this.deferMaxMs;
    let last = -1;
    this.queue.forEach((p, i) => {
      if (p.deferred && p.at <= due) last = i;
    });
    for (let i = 0; i <= last; i++) this.queue[i]!.deferred = false;
    if (last >= 0) this.kick();
    const next = this.queue.find((p) => p.deferred);
    if (next) {
      this.deferTimer = setTimeout(() => this.promoteDeferred(), Math.max(1, next.at + this.deferMaxMs - Date.now()));
      this.deferTimer.unref();
    }
  }

  private clearDeferTimer(): void {
    if (this.deferTimer) clearTimeout(this.deferTimer);
    this.deferTimer = null;
  }

  private nextArrival(): Promise<void> {
    if (!this.arrival) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.arrival = {
        promise,
        resolve: () => {
          this.arrival = null;
          resolve();
        },
      };
    }
    return this.arrival.promise;
  }

  private launch(batch: Pending[], prev: Flight<Pending> | null): void {
    const flight = new Flight(batch);
    this.open.push(flight);
    const m = this.merged(batch);
    // Pipelining pays under load: a batch that started queueing while the journal was idle
    // (and any model change) goes alone, as one statement when it can.
    const run = this.depth > 1 && batch[0]!.busy && !touchesModel(m) ? this.runPipelined(flight, prev, m) : this.runAlone(flight, prev, m);
    void run.finally(() => {
      this.open.splice(this.open.indexOf(flight), 1);
      flight.finish();
    });
  }

  /** Waits for the predecessor to be done, then writes the batch (retrying) on the serial path. */
  private async runAlone(flight: Flight<Pending>, prev: Flight<Pending> | null, m: MergedBatch): Promise<void> {
    await prev?.done.promise;
    await this.flushWithRetry(flight.batch, m);
  }

  /**
   * BEGIN / statement / COMMIT, committed right after the predecessor's commit. On any failure
   * — its own or the predecessor's — it is rolled back, waits for the predecessor to be done, and
   * redoes its batch on the serial path (which retries, and isolates a refused commit).
   */
  private async runPipelined(flight: Flight<Pending>, prev: Flight<Pending> | null, m: MergedBatch): Promise<void> {
    const started = performance.now();
    let maybeCommitted = false;
    try {
      const st = hotPathStatement(m);
      const query = st ? pgQuery(st.compile(this.kysely()), this.opts.preparedStatements ?? true) : null;
      // A commit answered 503 while this flush waited must not be committed with it.
      const before = (prev ? prev.committed.promise : Promise.resolve(true)).then((ok) => ok && !flight.batch.some((p) => p.dropped));
      for (const p of flight.batch) p.unsure = true;
      await writePipelined(await this.pool(), query, () => flight.executed.set(), before);
      // Set before the acks below: the successor's COMMIT goes out first, the acks cannot be
      // overtaken by it (its answer needs a round trip; these are answered now, in order).
      flight.committed.set(true);
      this.stats.pipelined++;
      this.committedFlush(flight.batch, m, query ? 3 : 0, started, 0);
      return;
    } catch (err) {
      flight.failed = true;
      flight.committed.set(false);
      // Only a COMMIT that went out leaves the outcome open: anything earlier was rolled back.
      maybeCommitted = err instanceof PipelineFailure && err.commitSent;
      for (const p of flight.batch) p.unsure = maybeCommitted;
      if (isConnectionError(err)) this.opts.log.warn({ err, commits: flight.batch.length }, 'pipelined flush failed on the connection: redoing it alone');
    }
    await prev?.done.promise;
    // Its COMMIT may have gone out before the failure: look before writing it again.
    await this.flushWithRetry(flight.batch, m, maybeCommitted);
  }

  /** The `pg` pool under the ORM (the pipelined flush holds a connection across its predecessor's commit). */
  private pool(): Promise<Pool> {
    return (this.pgPool ??= this.opts.orm.em.getConnection().getNativeClient());
  }

  /** The batch's changes coalesced, with the flush's stamp. */
  private merged(batch: Pending[]): MergedBatch {
    const m = mergeChanges(batch.flatMap((p) => p.changes));
    m.stamp = `${this.instance}:${++this.flushSeq}`;
    return m;
  }

  /**
   * Writes the batch, retrying while the database is unreachable. A retry first asks whether the
   * failed attempt committed after all (the connection broke after the COMMIT went out, before
   * its answer came back), so that its transitions are not logged twice; `maybeCommitted` asks
   * before the first attempt too (a pipelined flush that failed is redone here).
   */
  private async flushWithRetry(batch: Pending[], m: MergedBatch = this.merged(batch), maybeCommitted = false): Promise<void> {
    let delay = this.opts.retryMinMs ?? 50;
    // Whether the batch is known not to be in the database. Not after a pipelined failure whose
    // COMMIT went out, nor after an attempt that broke once its statement was sent; known again
    // once the stamp is looked for and not found.
    let absent = !maybeCommitted;
    for (let attempt = 0; ; attempt++) {
      // An attempt that fails before it could write (no connection) leaves what was known.
      let sent = false;
      try {
        const started = performance.now();
        if (!absent) {
          if (await this.alreadyCommitted(m)) {
            this.opts.log.warn({ commits: batch.length, flush: m.stamp }, 'a flush whose answer was lost had committed: not writing it again');
            this.committedFlush(batch, m, 1, started, attempt);
            return;
          }
          // Known not to be there. A flush with no transition carries no stamp to look for: it
          // is only upserts, so writing it again is harmless, and it stays unsure until written.
          if (m.transitions.length > 0) absent = true;
        }
        // Not in the database: what was answered 503 meanwhile is left out (503 means not done).
        if (batch.some((p) => p.dropped)) {
          batch = batch.filter((p) => !p.dropped);
          if (batch.length === 0) return;
          m = this.merged(batch);
        }
        for (const p of batch) p.unsure = true;
        sent = true;
        const statements = await this.write(m);
        this.committedFlush(batch, m, statements, started, attempt);
        return;
      } catch (err) {
        // Refused at the door (no connection) or by the server (an error answer rolls back): not
        // in the database. A connection broken once the statement was out: maybe.
        if (sent && mayHaveCommitted(err)) absent = false;
        for (const p of batch) p.unsure = !absent;
        const kind = classifyFailure(err);
        if (kind !== 'outage') return this.isolate(batch, err, kind);
        if (this.abandoned)
          return this.refuse(
            batch,
            new CyborgError('service.shutting_down', 'the journal closed while the database was unreachable; the change was not written', {}, { cause: err }),
          );
        this.stats.retries++;
        this.failingSince ??= Date.now();
        this.watchForReturn();
        if (attempt === 0) this.opts.log.error({ err, commits: batch.length, queued: this.queue.length }, 'database unreachable: flush will be retried');
        await this.sleep(delay);
        delay = Math.min(delay * 2, this.opts.retryMaxMs ?? 2_000);
      }
    }
  }

  /** Counts a committed flush and acknowledges its commits. */
  private committedFlush(batch: Pending[], m: MergedBatch, statements: number, started: number, attempt: number): void {
    this.onFlush?.(
      batch.reduce((n, p) => n + p.changes.length, 0),
      (performance.now() - started) / 1000,
    );
    this.stats.flushes++;
    this.stats.commits += batch.length;
    this.stats.statements += statements;
    this.stats.transitions += m.transitions.length;
    if (this.failingSince !== null) {
      this.opts.log.info({ attempts: attempt + 1, commits: batch.length, downMs: Date.now() - this.failingSince }, 'database reachable again: flush committed');
      this.failingSince = null;
    }
    const acks: (() => void)[] = [];
    for (const p of batch)
      if (!p.settled) {
        p.settled = true;
        acks.push(p.resolve);
      }
    this.answers.add(acks);
    const landed = batch.filter((p) => p.dropped);
    if (landed.length > 0) {
      // The one case where a 503 was not "not done": the connection broke after the COMMIT went
      // out, and the database had taken it. Memory follows the database (the conductor re-takes these).
      this.stats.landedAfterRefusal += landed.length;
      this.opts.log.error(
        { commits: landed.length, flush: m.stamp },
        'commits answered 503 had committed before the connection broke: the conductor takes them back',
      );
      this.onLanded?.(landed.flatMap((p) => p.changes));
    }
  }

  /**
   * A flush failed for a reason other than an outage (a value or row the database refuses, a
   * bug): retrying the same batch would fail forever and block everyone. The batch is halved and
   * each half written on its own, in order, until the commits that fail are alone: those are
   * rejected, every other one commits. One bad commit among n costs about 2·log2(n) flushes.
   */
  private async isolate(batch: Pending[], err: unknown, kind: 'data' | 'other'): Promise<void> {
    if (batch.length === 1) {
      const state = sqlState(err);
      if (kind === 'data') {
        this.opts.log.warn({ err, sqlState: state }, 'commit refused by the database for its data');
        this.refuse(batch, new CyborgError('persistence.refused', refusalText(state), state ? { sqlState: state } : {}, { cause: err }));
      } else {
        this.opts.log.error({ err, sqlState: state }, 'commit failed in the database');
        this.refuse(batch, new CyborgError('persistence.failed', 'the database could not write the change', state ? { sqlState: state } : {}, { cause: err }));
      }
      return;
    }
    this.opts.log.warn({ err, commits: batch.length }, 'a batch was refused: splitting it to find the commits at fault');
    const half = Math.ceil(batch.length / 2);
    await this.flushWithRetry(batch.slice(0, half));
    await this.flushWithRetry(batch.slice(half));
  }

  /** Answers the batch's commits that still wait with `err`, in commit order. */
  private refuse(batch: Pending[], err: CyborgError): void {
    const answers: (() => void)[] = [];
    for (const p of batch)
      if (!p.settled) {
        p.settled = true;
        answers.push(() => p.reject(err));
      }
    this.answers.add(answers);
  }

  /**
   * One transaction: the model through the unit of work, the hot rows through batched SQL.
   * Returns the hot-path statements sent. Leaves `m` as it found it but for inventories that
   * the memo shows unchanged (dropped: a retry of the same batch would drop them again).
   */
  private async write(m: MergedBatch): Promise<number> {
    const inventories = new Map<string, DeviceT[]>();
    for (const [host, devices] of m.inventories) {
      const prev = this.written(host);
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
      await this.opts.orm.em.fork().transactional(async (em) => {
        await writeModel(em, m);
        statements += await writeHotPath(em.getKysely() as unknown as Kysely<object>, m);
      });
      this.stats.modelFlushes++;
    } else {
      statements += await writeHotPathOnPool(await this.pool(), this.kysely(), m, this.opts.preparedStatements ?? true);
    }
    for (const [host, devices] of inventories) this.inventoryWritten.set(host, devices);
    return statements;
  }

  /**
   * Whether the flush `m` is in the database: its stamped transition row is (a flush commits
   * whole). A flush without transitions only upserts rows, which writing again leaves as they are.
   */
  private async alreadyCommitted(m: MergedBatch): Promise<boolean> {
    if (!m.stamp || m.transitions.length === 0) return false;
    const { rows } = await sql`select 1 from transition_log where flush = ${m.stamp}`.execute(this.kysely());
    if (rows.length === 0) return false;
    // What write() would have recorded: these reports are what the database holds now.
    for (const [host, devices] of m.inventories) this.inventoryWritten.set(host, devices);
    return true;
  }

  /** Journal.committedStates: two reads on the pool, beside the flushes. */
  async committedStates(): Promise<{ accelerators: [string, string][]; arqs: [string, string][] }> {
    const db = this.kysely();
    const [accs, arqs] = await Promise.all([
      sql<{ id: string; state: string }>`select id, state from accelerators`.execute(db),
      sql<{ uuid: string; state: string }>`select uuid, machine_state as state from extended_accelerator_requests`.execute(db),
    ]);
    return { accelerators: accs.rows.map((r) => [r.id, r.state]), arqs: arqs.rows.map((r) => [r.uuid, r.state]) };
  }

  /** The host each of `ids` is recorded on (db/holders.ts): the report door's question. */
  recordedHolders(ids: readonly string[]): Promise<Map<string, string>> {
    return recordedHolders(this.kysely(), ids);
  }

  /** The ORM's Kysely on the pool (outside any unit of work), typed loosely for raw statements. */
  private kysely(): Kysely<object> {
    return this.opts.orm.em.getKysely() as unknown as Kysely<object>;
  }

  /**
   * Answers commits that waited too long with 503 while the database is unreachable (a flush
   * failed on the connection and none has succeeded since), and drops them. A database that is
   * merely slow is waited for: its answers come, and a 503 would only hide a commit that will land.
   */
  private startSweeper(): void {
    if (this.sweeper) return;
    const every = Math.max(10, Math.min(500, Math.floor(this.downAfterMs / 4)));
    this.sweeper = setInterval(() => {
      if (this.failingSince === null) return;
      this.sweep(this.down() ? 0 : this.opts.unavailableAfterMs);
    }, every);
    this.sweeper.unref();
  }

  /**
   * Once a commit has waited `olderThanMs` while the database is unreachable, answers 503 to
   * every commit that still waits, and drops them: 503 means "not done". Those queued are taken
   * out; those in a flush under way are left out when it is redone (`flushWithRetry`). All of
   * them, not only the oldest: a later commit may build on an earlier one (an actor's next
   * transition), and the database must never hold the one without the other. Answered through
   * `answers`, behind the acks already due, so commits are still answered in the order made.
   */
  private sweep(olderThanMs: number): void {
    if (this.failingSince === null) return;
    // Not one that may be in the database: its answer waits for the database to say.
    const waiting = [...this.open.flatMap((f) => f.batch), ...this.queue].filter((p) => !p.settled && !p.unsure);
    const limit = Date.now() - olderThanMs;
    if (!waiting.some((p) => p.at <= limit)) return;
    const downS = Math.round((Date.now() - this.failingSince) / 1000);
    const err = new CyborgError(
      'persistence.unavailable',
      `the database has been unreachable for ${downS} s; the change was not made: send it again once the service is ready`,
      { retryAfterS: Math.max(1, Math.ceil((this.opts.retryMaxMs ?? 2_000) / 1000)) },
    );
    const answers: (() => void)[] = [];
    for (const p of waiting) {
      p.settled = true;
      p.dropped = true;
      answers.push(() => p.reject(err));
    }
    this.stats.dropped += waiting.length;
    this.queue = this.queue.filter((p) => !p.dropped);
    this.answers.add(answers);
  }

  /**
   * While the database is away and no flush is being retried (everything was answered 503 and
   * dropped), nothing else would notice its return: a round trip every half second does.
   */
  private watchForReturn(): void {
    if (this.returnWatch || this.closed) return;
    let probing = false;
    this.returnWatch = setInterval(
      () => {
        if (this.failingSince === null || this.closed) {
          this.stopReturnWatch();
          return;
        }
        if (probing || this.open.length > 0) return; // a flush's own retries will tell
        probing = true;
        sql`select 1`
          .execute(this.kysely())
          .then(
            () => {
              if (this.failingSince === null || this.open.length > 0) return;
              this.opts.log.info({ downMs: Date.now() - this.failingSince }, 'database reachable again');
              this.failingSince = null;
              this.stopReturnWatch();
            },
            () => undefined,
          )
          .finally(() => {
            probing = false;
          });
      },
      Math.min(500, this.opts.retryMaxMs ?? 2_000),
    );
    this.returnWatch.unref();
  }

  private stopReturnWatch(): void {
    if (this.returnWatch) clearInterval(this.returnWatch);
    this.returnWatch = null;
  }

  private stopSweeper(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  /** Waits `ms`, or less when `close()` gives up on the database. */
  private sleep(ms: number): Promise<void> {
    if (this.abandoned) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }
}
