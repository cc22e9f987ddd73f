import type { Logger } from 'pino';

export interface OutageOptions {
  log: Logger;
  /** How long a commit may wait for an unreachable database before it is answered 503. */
  unavailableAfterMs: number;
  /** How long the database must have been unreachable before every waiting commit is answered 503. */
  downAfterMs: number;
  /** The probe's period ceiling (the retry backoff's maximum). */
  retryMaxMs: number;
  /** Answers 503 to what has waited `olderThanMs` (the journal's `sweep`). */
  sweep: (olderThanMs: number) => void;
  /** A round trip to the database (`select 1`). */
  probe: () => Promise<unknown>;
  /** A flush is open: its own retries will tell when the database is back. */
  flushing: () => boolean;
}

/**
 * What the journal knows of the database's reachability: since when flushes fail on the
 * connection, the sweeper that answers 503 to commits that waited too long, the probe that notices
 * the database's return when nothing is being retried, and `close()` giving up on it.
 */
export class Outage {
  /** When the first flush failed on the connection, since the last success (null: healthy). */
  failingSince: number | null = null;
  /** `close()` gave up on an unreachable database: batches are answered, no longer retried. */
  abandoned = false;
  /** Wakes a flush sleeping between retries (`close()` gave up). */
  private readonly sleepers = new Set<() => void>();
  private sweeper: NodeJS.Timeout | null = null;
  private returnWatch: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly o: OutageOptions) {}

  /** Whether the database has been unreachable for `downAfterMs`: commits are answered 503 at once. */
  down(): boolean {
    return this.failingSince !== null && Date.now() - this.failingSince >= this.o.downAfterMs;
  }

  /** The readiness check's text: undefined when the database answers. */
  readiness(): string | undefined {
    if (!this.down()) return undefined;
    return `database unreachable for ${Math.round((Date.now() - this.failingSince!) / 1000)} s; changes are refused (503, not made) until it is back`;
  }

  /** A flush failed on the connection. */
  failed(): void {
    this.failingSince ??= Date.now();
    this.watchForReturn();
  }

  /** A flush committed: the database answers again (said once per outage). */
  reachable(fields: Record<string, unknown>): void {
    if (this.failingSince === null) return;
    this.o.log.info({ ...fields, downMs: Date.now() - this.failingSince }, 'database reachable again: flush committed');
    this.failingSince = null;
  }

  /** Runs the sweep while flushes run (started by the journal's kick, stopped when the pump ends). */
  startSweeper(): void {
    if (this.sweeper) return;
    const every = Math.max(10, Math.min(500, Math.floor(this.o.downAfterMs / 4)));
    this.sweeper = setInterval(() => {
      if (this.failingSince === null) return;
      this.o.sweep(this.down() ? 0 : this.o.unavailableAfterMs);
    }, every);
    this.sweeper.unref();
  }

  stopSweeper(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  /** `close()` gives up on the database: sleeping retries wake and answer their batches. */
  abandon(): void {
    this.abandoned = true;
    for (const wake of this.sleepers) wake();
  }

  /** The journal is closing: no new probe starts (its flushes' retries still run). */
  closing(): void {
    this.closed = true;
  }

  /** Stops the timers for good. */
  stop(): void {
    this.closing();
    this.stopSweeper();
    this.stopReturnWatch();
  }

  /** Waits `ms`, or less when `close()` gives up on the database. */
  sleep(ms: number): Promise<void> {
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
        if (probing || this.o.flushing()) return; // a flush's own retries will tell
        probing = true;
        this.o
          .probe()
          .then(
            () => {
              if (this.failingSince === null || this.o.flushing()) return;
              this.o.log.info({ downMs: Date.now() - this.failingSince }, 'database reachable again');
              this.failingSince = null;
              this.stopReturnWatch();
            },
            () => undefined,
          )
          .finally(() => {
            probing = false;
          });
      },
      Math.min(500, this.o.retryMaxMs),
    );
    this.returnWatch.unref();
  }

  private stopReturnWatch(): void {
    if (this.returnWatch) clearInterval(this.returnWatch);
    this.returnWatch = null;
  }
}
