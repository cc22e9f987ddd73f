import type { Logger } from 'pino';
import type { OrphanSweep } from '../services/index.js';
import type { Supervisor } from './supervisor.js';

export interface RoundsOptions {
  tree: Supervisor;
  orphans: OrphanSweep;
  /** Drops the usage windows of accelerators no longer kept here. */
  pruneUsage: () => void;
  log: Logger;
  everyMs: number;
}

/**
 * The conductor's periodic work: finishing acknowledged deletes and unbinds whose release could
 * not be done when asked, pruning usage windows, and sweeping attach handles held for ARQs that
 * are gone. A round also runs soon after anything a waiting release may need (an agent
 * registering, a host back, hosts or ARQs adopted): several triggers at once make one round.
 */
export class Rounds {
  private timer: NodeJS.Timeout | undefined;
  private queued = false;
  private stopping = false;

  constructor(private readonly opts: RoundsOptions) {}

  start(): void {
    this.timer = setInterval(() => {
      this.reconcile(false);
      this.opts.pruneUsage();
      if (!this.stopping)
        void this.opts.orphans
          .run()
          .catch((err: unknown) => this.opts.log.warn({ err }, 'the sweep of orphaned attach handles could not ask the ARQ home; next round'));
    }, this.opts.everyMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopping = true;
    clearInterval(this.timer);
  }

  /**
   * Retries each unfinished delete and unbind; one that fails again waits for the next round
   * (the timer's rounds back off per ARQ unless `force`). Returns how many were retried.
   */
  reconcile(force = true): number {
    if (force) this.queued = false;
    if (this.stopping) return 0;
    let n = 0;
    for (const a of this.opts.tree.arqs.values()) if (a.retry(force)) n++;
    if (n > 0) this.opts.log.info({ arqs: n }, 'reconciling unfinished ARQ deletes and unbinds');
    return n;
  }

  /** A reconciliation round at the next turn. */
  soon(): void {
    if (this.queued) return;
    this.queued = true;
    setImmediate(() => this.reconcile());
  }
}
