import type { Pool, QueryConfig } from 'pg';
import { sqlState as sqlStateOf } from './retry.js';

/** A one-shot signal: a promise whose resolver is called by whoever reaches the milestone. */
export class Signal<T = void> {
  private readonly deferred = Promise.withResolvers<T>();
  readonly promise = this.deferred.promise;
  private reached = false;

  get isSet(): boolean {
    return this.reached;
  }

  set(v: T): void {
    if (this.reached) return;
    this.reached = true;
    this.deferred.resolve(v);
  }
}

/**
 * One flush on its way through the journal's pipeline, and the three moments its successor
 * orders itself by:
 * - `executed`: its statement has run, so it holds its row locks — a successor may send its own
 *   statement now (it waits in PostgreSQL behind those locks, never ahead of them, and its log
 *   rows draw later serial ids);
 * - `committed`: its own transaction committed (true), or it failed (false: whatever a successor
 *   executed after it must be rolled back and redone after it);
 * - `done`: every commit of its batch is answered (acknowledged, or rejected by isolation).
 * A flush that does not pipeline reaches all three when it ends.
 */
export class Flight<P> {
  readonly executed = new Signal();
  readonly committed = new Signal<boolean>();
  readonly done = new Signal();
  /** Its pipelined attempt failed: it is being redone alone. */
  failed = false;

  constructor(readonly batch: P[]) {}

  /** Its batch is settled, whichever path it took. */
  finish(): void {
    this.executed.set();
    this.committed.set(true);
    this.done.set();
  }
}

/** A pipelined flush failed; `commitSent`: its COMMIT had gone out, so it may have committed. */
export class PipelineFailure extends Error {
  override name = 'PipelineFailure';

  constructor(
    cause: unknown,
    readonly commitSent: boolean,
  ) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }
}

/** The predecessor failed after this flush executed: roll back and redo after it. */
export class PredecessorFailed extends Error {
  override name = 'PredecessorFailed';
}

/**
 * Writes one hot-path statement as BEGIN; statement; COMMIT on a pooled connection of its own,
 * and sends the COMMIT only once `before` (the predecessor's commit) resolved true. `executed`
 * is called as soon as the statement has run, while the transaction is still open: that is when
 * the next flush may send its own. Throws on any failure, the transaction rolled back.
 *
 * Why `pg` directly rather than Kysely's controlled transaction: Kysely runs one query at a time
 * on a connection, so the statement would go out only once BEGIN's answer had waited for a turn
 * of the conductor's busy event loop. `pg` queues the statement behind BEGIN and sends it from
 * the socket handler the moment BEGIN is answered; and a connection that broke mid-transaction
 * is released with its error, so the pool throws it away.
 */
export async function writePipelined(pool: Pool, query: QueryConfig | null, executed: () => void, before: Promise<boolean>): Promise<void> {
  if (!query) {
    // Nothing to write (an empty commit is a barrier): only the order is kept.
    executed();
    if (!(await before)) throw new PredecessorFailed('an earlier flush failed');
    return;
  }
  let commitSent = false;
  let client;
  try {
    client = await pool.connect();
  } catch (err) {
    throw new PipelineFailure(err, false);
  }
  let broken: Error | undefined;
  try {
    // BEGIN fails only with its connection, and then the statement fails too: it never runs
    // outside the transaction.
    await Promise.all([client.query('begin'), client.query(query)]);
    executed();
    if (!(await before)) throw new PredecessorFailed('an earlier flush failed after this one executed');
    commitSent = true;
    await client.query('commit');
  } catch (err) {
    // A live connection is rolled back and reused; a dead one is thrown away (the server rolls
    // back on its side).
    await client.query('rollback').catch((e: unknown) => {
      // untyped: the rollback's own failure, kept only to discard the connection; never answered to anyone.
      broken = e instanceof Error ? e : new Error(String(e));
    });
    throw new PipelineFailure(err, commitSent && !sqlStateOf(err));
  } finally {
    client.release(broken);
  }
}
