import type { Logger } from 'pino';

/**
 * "No 404 for a known id while loading" (issue 39): whether the api's view may lack what exists.
 *
 * A view is replaced whole by each load (ViewSync): at an api's start, after a conductor restart,
 * after a lease takeover. The snapshot it is built from is what the conductors hold then — and a
 * conductor that has just started, or is taking over a dead one's hosts, does not hold their
 * accelerators until it has rebuilt them from the database (its readiness says `taking over …`).
 * Until every conductor says it is not taking any host over, a miss is "not yet" (503 +
 * Retry-After), never a 404: Nova treats a 404 on a bind as a failed boot. A conductor that does
 * not answer keeps it so, for at most `maxMs`; after that a miss is a 404 again.
 */
export class ViewCompleteness {
  private pendingSince: number | null = null;
  private watching = false;

  constructor(
    private readonly o: {
      /** Whether a conductor is taking hosts over: true, false (every one answered, none is), or undefined (not all answered). */
      takeoverUnderWay: () => Promise<boolean | undefined>;
      log: Logger;
      everyMs?: number;
      maxMs?: number;
    },
  ) {}

  /** The view has just been replaced: misses are "not yet" until the conductors say they hold everything. */
  replaced(): void {
    this.pendingSince = Date.now();
    if (!this.watching) void this.watch();
  }

  /** Whether the view may lack what the conductors will show once their takeovers are done. */
  get incomplete(): boolean {
    return this.pendingSince !== null;
  }

  stop(): void {
    this.pendingSince = null;
  }

  private async watch(): Promise<void> {
    this.watching = true;
    const every = this.o.everyMs ?? 250;
    const maxMs = this.o.maxMs ?? 60_000;
    try {
      while (this.pendingSince !== null) {
        const asked = Date.now();
        const busy = await this.o.takeoverUnderWay().catch(() => undefined);
        // The views a finished takeover published came on the same connection before this answer.
        // A replacement meanwhile asks again.
        if (busy === false && this.pendingSince !== null && this.pendingSince <= asked) this.pendingSince = null;
        else if (this.pendingSince !== null && Date.now() - this.pendingSince > maxMs) {
          this.o.log.warn(
            { waitedMs: Date.now() - this.pendingSince },
            'the conductors did not say their takeovers were done: a miss in the view is a 404 again',
          );
          this.pendingSince = null;
        }
        if (this.pendingSince !== null) await new Promise((r) => setTimeout(r, every).unref());
      }
    } finally {
      this.watching = false;
    }
  }
}
