import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { CallDeadline, Change } from '../actors/runtime/index.js';
import type { CommitState } from './commit-lifecycle.js';
import type { Retention } from './retention.js';

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
  /** Of `dropped`, those left out because their caller's deadline passed (db/deadline.ts). */
  deadlinePassed: number;
}

/** Zeroed stats. */
export function newStats(): JournalStats {
  return {
    flushes: 0,
    commits: 0,
    transitions: 0,
    statements: 0,
    modelFlushes: 0,
    pipelined: 0,
    retries: 0,
    dropped: 0,
    landedAfterRefusal: 0,
    deadlinePassed: 0,
  };
}

/** One commit the journal holds until it is answered; where it is in its life is `state` (commit-lifecycle.ts). */
export interface Pending {
  changes: Change[];
  at: number;
  resolve: () => void;
  reject: (err: unknown) => void;
  state: CommitState;
  /** A flush was open when this commit arrived: the journal is busy, worth pipelining (a hint, not a state). */
  busy: boolean;
  /** `CommitOptions.untilWritten`: never dropped, whatever waits (drop() passes it by). */
  keep?: true;
  /** The deadline of the call it was made for (db/deadline.ts), absent for the conductor's own work. */
  call?: CallDeadline;
}
