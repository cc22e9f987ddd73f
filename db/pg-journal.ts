import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { callDeadline, type Change, type CommitOptions, type Journal } from '../actors/runtime/index.js';
import { CyborgError } from '../errors/index.js';
import { Answers } from './answers.js';
import { checkChanges } from './bounds.js';
import { COMMIT_LIFECYCLE, CommitStates, stepCommit } from './commit-lifecycle.js';
import { Deadlines } from './deadline.js';
import { DeferTimer } from './deferral.js';
import { Flight, PipelineFailure, writePipelined } from './flight.js';
import { FlushWriter } from './flush-writer.js';
import { newStats, type JournalStats, type Pending, type PgJournalOptions } from './journal-types.js';
import { mergeChanges, touchesModel, type MergedBatch } from './merge.js';
import { Outage } from './outage.js';
import { JournalReads } from './journal-reads.js';
import { startRetention } from './retention.js';
import { isConnectionError } from './retry.js';
import { committedFlush, flushWithRetry, type FlushDeps } from './serial-flush.js';

export type { JournalStats, PgJournalOptions } from './journal-types.js';

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
 * done (see `drop`). A commit that may already be in the database (its flush was on the wire
 * when the connection broke) is never answered 503: it waits for the database to say whether it
 * landed. Nothing is acknowledged before it is committed. Only outages are retried (retry.ts): a
 * batch the database refuses for its data is split until the bad commits fail alone (serial-flush.ts),
 * and a change it could never store is refused before it is queued (bounds.ts).
 *
 * Where each commit is — queued, in a flush, maybe committed, answered — is its state in one
 * lifecycle table (commit-lifecycle.ts), which also says which may be answered 503.
 *
 * No promise of the journal is left without a handler: answers go through `answers` in commit
 * order, and a caller that drops its commit's promise cannot crash the process with it.
 */
export class PgJournal extends JournalReads implements Journal {
  private queue: Pending[] = [];
  /** Flushes started and not yet done, oldest first. */
  private open: Flight<Pending>[] = [];
  private flushing: Promise<void> | null = null;
  /** Wakes the pump when a commit arrives while it waits on an open flush. */
  private arrival: { promise: Promise<void>; resolve: () => void } | null = null;
  private closed = false;
  private readonly depth: number;
  /** Acks (and refusals) of finished flushes, handed out in commit order, in turns (answers.ts). */
  private readonly answers = new Answers();
  private readonly outage: Outage;
  private readonly deferred: DeferTimer;
  /** Calls' deadlines: what their callers were answered "not done" on is never written (deadline.ts). */
  private readonly deadlines: Deadlines;
  /** What a flush on the serial path works with (serial-flush.ts). */
  private readonly flush: FlushDeps;
  /** This journal's flushes' ids: `<instance>:<n>`, stamped on each flush's last transition row. */
  private readonly instance = randomUUID();
  private flushSeq = 0;
  readonly stats: JournalStats;
  /** Called after each committed flush with its size and duration: the metrics hook. */
  onFlush: ((changes: number, seconds: number) => void) | undefined = undefined;
  /** Journal.onLanded: changes answered 503 that turned out committed (set by the conductor). */
  onLanded: ((changes: Change[]) => void) | undefined = undefined;
  /** Stops the periodic delete of the log's oldest rows (db/retention.ts). */
  private readonly stopRetention: () => Promise<void>;

  constructor(private readonly opts: PgJournalOptions) {
    const stats = newStats();
    super(opts.orm, new FlushWriter(opts.orm, opts.preparedStatements ?? true, stats));
    this.stats = stats;
    // Each open flush holds a connection until it commits: more than the pool would only queue.
    const pool = (opts.orm.config.get('pool') as { max?: number } | undefined)?.max ?? 1;
    this.depth = Math.max(1, Math.min(opts.pipeline ?? 2, pool));
    const retryMaxMs = opts.retryMaxMs ?? 2_000;
    this.outage = new Outage({
      log: opts.log,
      unavailableAfterMs: opts.unavailableAfterMs,
      downAfterMs: Math.min(opts.downAfterMs ?? 1_000, opts.unavailableAfterMs),
      retryMaxMs,
      sweep: (olderThanMs) => this.sweep(olderThanMs),
      probe: () => sql`select 1`.execute(this.writer.kysely()),
      flushing: () => this.open.length > 0,
    });
    this.deferred = new DeferTimer(
      opts.deferMaxMs ?? 500,
      () => this.queue,
      () => this.kick(),
    );
    this.deadlines = new Deadlines(opts.log, (which, err) => {
      const n = this.drop(which, err);
      this.stats.deadlinePassed += n;
      return n;
    });
    this.flush = {
      writer: this.writer,
      outage: this.outage,
      answers: this.answers,
      stats: this.stats,
      log: opts.log,
      retryMinMs: opts.retryMinMs ?? 50,
      retryMaxMs,
      merged: (batch) => this.merged(batch),
      queued: () => this.queue.length,
      hooks: this,
    };
    this.stopRetention = opts.retention ? startRetention(this.writer.kysely(), opts.retention, opts.log) : async () => {};
  }

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
    const keep = opts?.untilWritten === true;
    const call = keep ? undefined : callDeadline();
    if (this.closed) refused = new CyborgError('service.shutting_down', 'the journal is closed');
    else if ((refused = this.deadlines.admit(call))) this.stats.deadlinePassed++;
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
          for (const c of changes) if (c.type === 'inventory') this.writer.prepare(c.host, c.devices);
          const deferred = opts?.defer === true;
          const state = COMMIT_LIFECYCLE.received[deferred ? 'DEFER' : 'QUEUE']!;
          this.queue.push({
            changes,
            at: Date.now(),
            resolve,
            reject,
            state,
            busy: this.open.length > 0,
            ...(call ? { call } : {}),
            ...(keep ? { keep } : {}),
          });
          if (this.outage.down()) this.sweep(0);
          if (deferred) this.deferred.arm();
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
    return !this.outage.down();
  }

  /** The readiness check's text: undefined when the database answers. */
  readiness(): string | undefined {
    return this.outage.readiness();
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
    const answered = sql`select 1`.execute(this.writer.kysely()).then(
      () => undefined,
      (err: unknown) => `database probe failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
    try {
      return await Promise.race([answered, late]);
    } finally {
      clearTimeout(timer);
    }
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
    this.writer.inventories.delete(host);
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
    this.outage.closing();
    // Nothing comes after: what was deferred is written now.
    for (const p of this.queue) stepCommit(p, 'PROMOTE');
    this.deferred.clear();
    if (this.queue.length > 0) this.kick();
    const giveUp = setTimeout(() => {
      if (this.outage.failingSince === null) return; // the database answers: the flushes end by themselves
      this.opts.log.error({ pending: this.pending }, 'closing: the database is still unreachable; unwritten commits are dropped');
      this.outage.abandon();
    }, this.opts.closeTimeoutMs ?? 10_000);
    giveUp.unref();
    try {
      while (this.flushing) await this.flushing;
    } finally {
      clearTimeout(giveUp);
    }
    this.answers.flushAll();
    this.outage.stop();
    await this.stopRetention();
    await this.opts.orm.close();
    await this.opts.afterClose?.();
  }

  /**
   * Answers `err` to every commit `which` picks that is known not to be in the database (the
   * lifecycle's `DROP`: queued, deferred, in a flush not yet sent, between retries), and leaves it
   * out: those queued are taken out now, those in a flush under way when it is redone
   * (serial-flush.ts). One that may be in the database is not picked: its answer waits for the
   * database to say, nor one that must be written whenever it can (`CommitOptions.untilWritten`).
   * Answered through `answers`, behind the acks already due, in commit order.
   * Returns how many were dropped.
   */
  drop(which: (p: Pending) => boolean, err: CyborgError): number {
    const answers: (() => void)[] = [];
    for (const p of [...this.open.flatMap((f) => f.batch), ...this.queue])
      if (!p.keep && COMMIT_LIFECYCLE[p.state].DROP && which(p) && stepCommit(p, 'DROP')) answers.push(() => p.reject(err));
    if (answers.length === 0) return 0;
    this.stats.dropped += answers.length;
    this.queue = this.queue.filter((p) => p.state !== CommitStates.dropped);
    this.answers.add(answers);
    return answers.length;
  }

  /**
   * Once a commit has waited `olderThanMs` while the database is unreachable (a flush failed on
   * the connection and none has succeeded since), answers 503 to every commit that still waits,
   * and drops them: 503 means "not done". All of them, not only the oldest: a later commit may
   * build on an earlier one (an actor's next transition), and the database must never hold the one
   * without the other. A database that is merely slow is waited for: its answers come, and a 503
   * would only hide a commit that will land.
   */
  private sweep(olderThanMs: number): void {
    const since = this.outage.failingSince;
    if (since === null) return;
    const limit = Date.now() - olderThanMs;
    const waiting = [...this.open.flatMap((f) => f.batch), ...this.queue].filter((p) => COMMIT_LIFECYCLE[p.state].DROP);
    if (!waiting.some((p) => p.at <= limit)) return;
    const err = new CyborgError(
      'persistence.unavailable',
      `the database has been unreachable for ${Math.round((Date.now() - since) / 1000)} s; the change was not made: send it again once the service is ready`,
      { retryAfterS: Math.max(1, Math.ceil((this.opts.retryMaxMs ?? 2_000) / 1000)) },
    );
    this.drop(() => true, err);
  }

  /** The batch's changes coalesced, with the flush's stamp. */
  private merged(batch: Pending[]): MergedBatch {
    const m = mergeChanges(batch.flatMap((p) => p.changes));
    m.stamp = `${this.instance}:${++this.flushSeq}`;
    return m;
  }

  private kick(): void {
    this.outage.startSweeper();
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
    this.outage.stopSweeper();
  }

  /** Whether a commit that is not deferred waits (a flush takes the deferred ones before it along). */
  private hasWork(): boolean {
    return this.queue.some((p) => p.state !== CommitStates.deferred);
  }

  private nextArrival(): Promise<void> {
    if (!this.arrival) {
      const { promise, resolve } = Promise.withResolvers<void>();
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
    for (const p of batch) stepCommit(p, 'TAKE');
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
    await flushWithRetry(this.flush, flight.batch, m);
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
      const query = this.writer.pipelinedQuery(m);
      // A commit answered 503 while this flush waited must not be committed with it.
      const before = (prev ? prev.committed.promise : Promise.resolve(true)).then((ok) => ok && !flight.batch.some((p) => p.state === CommitStates.dropped));
      for (const p of flight.batch) stepCommit(p, 'SEND');
      await writePipelined(await this.writer.pool(), query, () => flight.executed.set(), before);
      // Set before the acks below: the successor's COMMIT goes out first, the acks cannot be
      // overtaken by it (its answer needs a round trip; these are answered now, in order).
      flight.committed.set(true);
      this.stats.pipelined++;
      committedFlush(this.flush, flight.batch, m, query ? 3 : 0, started, 0);
      return;
    } catch (err) {
      flight.failed = true;
      flight.committed.set(false);
      // Only a COMMIT that went out leaves the outcome open: anything earlier was rolled back.
      maybeCommitted = err instanceof PipelineFailure && err.commitSent;
      for (const p of flight.batch) stepCommit(p, maybeCommitted ? 'LOST' : 'ROLLED_BACK');
      if (isConnectionError(err)) this.opts.log.warn({ err, commits: flight.batch.length }, 'pipelined flush failed on the connection: redoing it alone');
    }
    await prev?.done.promise;
    // Its COMMIT may have gone out before the failure: look before writing it again.
    await flushWithRetry(this.flush, flight.batch, m, maybeCommitted);
  }
}
