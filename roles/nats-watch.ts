import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';

/** How often a role says again that NATS is still down. */
export const NATS_DOWN_REPEAT_MS = 30_000;

/** The URL(s) as a log line may show them: no password, no token. */
export function natsUrlForLog(url: string): string {
  return url
    .split(',')
    .map((one) => one.trim().replace(/\/\/[^@/]*@/, '//***@'))
    .join(',');
}

/**
 * Says, at `warn`, that NATS cannot be reached — first a second after a role starts waiting for
 * it, then every 30 s while it stays down, and again after a later disconnect — so an operator
 * who started a role against a stopped or misnamed server reads why nothing happens.
 * `problem()` is the readiness text while it is down.
 */
export class NatsWatch {
  private timer: NodeJS.Timeout | undefined;
  private down: string | undefined;
  private stopped = false;
  private readonly shown: string;

  constructor(
    url: string,
    private readonly log: Logger,
    private readonly repeatMs = NATS_DOWN_REPEAT_MS,
  ) {
    this.shown = natsUrlForLog(url);
    this.waiting('cannot reach NATS at the start', 1_000);
  }

  /** The connection is up: watch it for later outages. */
  connected(nc: NatsConnection): void {
    this.up();
    void (async () => {
      for await (const s of nc.status()) {
        if (this.stopped) return;
        if (s.type === 'disconnect') this.waiting('NATS went away', this.repeatMs);
        else if (s.type === 'reconnect') this.up();
      }
    })().catch(() => undefined);
  }

  problem(): string | undefined {
    return this.down;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private waiting(what: string, firstAfterMs: number): void {
    this.down = `NATS unreachable at ${this.shown}`;
    clearTimeout(this.timer);
    const say = (): void => {
      if (this.stopped || this.down === undefined) return;
      this.log.warn(
        { nats: this.shown, option: '[DEFAULT] transport_url (NATS_URL, --nats)' },
        `${what}: NATS unreachable at ${this.shown}; waiting for it (said again every ${this.repeatMs / 1000} s while it is down)`,
      );
      this.timer = setTimeout(say, this.repeatMs);
      this.timer.unref();
    };
    this.timer = setTimeout(say, firstAfterMs);
    this.timer.unref();
  }

  private up(): void {
    clearTimeout(this.timer);
    this.down = undefined;
  }
}
