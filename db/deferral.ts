import { CommitStates, stepCommit } from './commit-lifecycle.js';
import type { Pending } from './journal-types.js';

/**
 * Makes sure a deferred commit is written within `maxMs` even if no other commit comes to take it
 * along: the timer promotes the deferred commits that have waited that long (with every deferred
 * one before them: order is kept) and is set again for the next one due.
 */
export class DeferTimer {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly maxMs: number,
    private readonly queue: () => Pending[],
    private readonly kick: () => void,
  ) {}

  arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => this.promote(), this.maxMs);
    this.timer.unref();
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private promote(): void {
    this.timer = null;
    const queue = this.queue();
    const due = Date.now() - this.maxMs;
    let last = -1;
    queue.forEach((p, i) => {
      if (p.state === CommitStates.deferred && p.at <= due) last = i;
    });
    for (let i = 0; i <= last; i++) stepCommit(queue[i]!, 'PROMOTE');
    if (last >= 0) this.kick();
    const next = queue.find((p) => p.state === CommitStates.deferred);
    if (next) {
      this.timer = setTimeout(() => this.promote(), Math.max(1, next.at + this.maxMs - Date.now()));
      this.timer.unref();
    }
  }
}
