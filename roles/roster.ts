import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { NatsBus } from '../bus/index.js';
import { PROTOCOL, RELEASE } from '../release/index.js';
import { rosterKey, type RosterEntry } from '../release/roster.js';

const enc = new TextEncoder();

/**
 * Keeps this conductor's roster entry (release/roster.ts) in the lease bucket: written every
 * `everyMs`, deleted on stop. A failed write is said at debug level: the next one comes soon and
 * upgrade-check reads a stale entry as gone.
 */
export function keepRoster(kv: KV, bus: NatsBus, id: string, host: string, log: Logger, everyMs = 2_000): () => Promise<void> {
  const write = (): void => {
    const level = bus.protocol;
    const entry: RosterEntry = {
      role: 'conductor',
      id,
      host,
      release: RELEASE,
      speaks: level.speaks(),
      reads: PROTOCOL.current,
      peers: level.seen(),
      at: Date.now(),
      windowMs: Math.max(level.opts.peerWindowMs, everyMs * 3),
    };
    kv.put(rosterKey(id), enc.encode(JSON.stringify(entry))).catch((err: unknown) => log.debug({ err }, 'roster entry not written'));
  };
  write();
  const timer = setInterval(write, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await kv.delete(rosterKey(id)).catch(() => undefined);
  };
}
