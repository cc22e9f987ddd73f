import type { Logger } from 'pino';
import type { Change } from '../actors/runtime/index.js';
import { CyborgError, refusalText } from '../errors/index.js';
import type { Answers } from './answers.js';
import { CommitStates, stepCommit } from './commit-lifecycle.js';
import type { FlushWriter } from './flush-writer.js';
import type { JournalStats, Pending } from './journal-types.js';
import type { MergedBatch } from './merge.js';
import type { Outage } from './outage.js';
import { classifyFailure, mayHaveCommitted, sqlState } from './retry.js';

/** What a flush on the serial path works with: the journal's parts, not the journal. */
export interface FlushDeps {
  readonly writer: FlushWriter;
  readonly outage: Outage;
  readonly answers: Answers;
  readonly stats: JournalStats;
  readonly log: Logger;
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
  /** The batch's changes coalesced, with a new flush stamp. */
  merged(batch: Pending[]): MergedBatch;
  /** Commits queued behind (for the log). */
  queued(): number;
  /** The journal's hooks, read at each flush (the conductor sets them after construction). */
  readonly hooks: {
    onFlush: ((changes: number, seconds: number) => void) | undefined;
    onLanded: ((changes: Change[]) => void) | undefined;
  };
}

/**
 * Writes the batch, retrying while the database is unreachable. A retry first asks whether the
 * failed attempt committed after all (the connection broke after the COMMIT went out, before
 * its answer came back), so that its transitions are not logged twice; `maybeCommitted` asks
 * before the first attempt too (a pipelined flush that failed is redone here). Each commit steps
 * through its lifecycle (commit-lifecycle.ts) as the attempts go: only those known absent from
 * the database may be dropped (503) while it waits.
 */
export async function flushWithRetry(d: FlushDeps, batch: Pending[], m: MergedBatch = d.merged(batch), maybeCommitted = false): Promise<void> {
  let delay = d.retryMinMs;
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
        if (await d.writer.alreadyCommitted(m)) {
          d.log.warn({ commits: batch.length, flush: m.stamp }, 'a flush whose answer was lost had committed: not writing it again');
          committedFlush(d, batch, m, 1, started, attempt);
          return;
        }
        // Known not to be there. A flush with no transition carries no stamp to look for: it
        // is only upserts, so writing it again is harmless, and it stays unsure until written.
        if (m.transitions.length > 0) {
          absent = true;
          for (const p of batch) stepCommit(p, 'ABSENT');
        }
      }
      // Not in the database: what was answered 503 meanwhile is left out (503 means not done).
      if (batch.some((p) => p.state === CommitStates.dropped)) {
        batch = batch.filter((p) => p.state !== CommitStates.dropped);
        if (batch.length === 0) return;
        m = d.merged(batch);
      }
      for (const p of batch) stepCommit(p, 'SEND');
      sent = true;
      const statements = await d.writer.write(m);
      committedFlush(d, batch, m, statements, started, attempt);
      return;
    } catch (err) {
      // Refused at the door (no connection) or by the server (an error answer rolls back): not
      // in the database. A connection broken once the statement was out: maybe.
      if (sent && mayHaveCommitted(err)) absent = false;
      if (sent) for (const p of batch) stepCommit(p, absent ? 'ROLLED_BACK' : 'LOST');
      const kind = classifyFailure(err);
      if (kind !== 'outage') return isolate(d, batch, err, kind);
      if (d.outage.abandoned)
        return refuse(
          d,
          batch,
          new CyborgError('service.shutting_down', 'the journal closed while the database was unreachable; the change was not written', {}, { cause: err }),
        );
      d.stats.retries++;
      d.outage.failed();
      if (attempt === 0) d.log.error({ err, commits: batch.length, queued: d.queued() }, 'database unreachable: flush will be retried');
      await d.outage.sleep(delay);
      delay = Math.min(delay * 2, d.retryMaxMs);
    }
  }
}

/** Counts a committed flush and acknowledges its commits. */
export function committedFlush(d: FlushDeps, batch: Pending[], m: MergedBatch, statements: number, started: number, attempt: number): void {
  d.hooks.onFlush?.(
    batch.reduce((n, p) => n + p.changes.length, 0),
    (performance.now() - started) / 1000,
  );
  d.stats.flushes++;
  d.stats.commits += batch.length;
  d.stats.statements += statements;
  d.stats.transitions += m.transitions.length;
  d.outage.reachable({ attempts: attempt + 1, commits: batch.length });
  const acks: (() => void)[] = [];
  const landed: Pending[] = [];
  for (const p of batch) {
    const wasDropped = p.state === CommitStates.dropped;
    if (!stepCommit(p, 'COMMITTED')) continue; // already answered: nothing is owed
    if (wasDropped) landed.push(p);
    else acks.push(p.resolve);
  }
  d.answers.add(acks);
  if (landed.length > 0) {
    // The one case where a 503 was not "not done": the connection broke after the COMMIT went
    // out, and the database had taken it. Memory follows the database (the conductor re-takes these).
    d.stats.landedAfterRefusal += landed.length;
    d.log.error({ commits: landed.length, flush: m.stamp }, 'commits answered 503 had committed before the connection broke: the conductor takes them back');
    d.hooks.onLanded?.(landed.flatMap((p) => p.changes));
  }
}

/**
 * A flush failed for a reason other than an outage (a value or row the database refuses, a
 * bug): retrying the same batch would fail forever and block everyone. The batch is halved and
 * each half written on its own, in order, until the commits that fail are alone: those are
 * rejected, every other one commits. One bad commit among n costs about 2·log2(n) flushes.
 */
async function isolate(d: FlushDeps, batch: Pending[], err: unknown, kind: 'data' | 'other'): Promise<void> {
  if (batch.length === 1) {
    const state = sqlState(err);
    if (kind === 'data') {
      d.log.warn({ err, sqlState: state }, 'commit refused by the database for its data');
      refuse(d, batch, new CyborgError('persistence.refused', refusalText(state), state ? { sqlState: state } : {}, { cause: err }));
    } else {
      d.log.error({ err, sqlState: state }, 'commit failed in the database');
      refuse(d, batch, new CyborgError('persistence.failed', 'the database could not write the change', state ? { sqlState: state } : {}, { cause: err }));
    }
    return;
  }
  d.log.warn({ err, commits: batch.length }, 'a batch was refused: splitting it to find the commits at fault');
  const half = Math.ceil(batch.length / 2);
  await flushWithRetry(d, batch.slice(0, half));
  await flushWithRetry(d, batch.slice(half));
}

/** Answers the batch's commits that still wait with `err`, in commit order. */
export function refuse(d: FlushDeps, batch: Pending[], err: CyborgError): void {
  const answers: (() => void)[] = [];
  for (const p of batch) if (stepCommit(p, 'REFUSE')) answers.push(() => p.reject(err));
  d.answers.add(answers);
}
