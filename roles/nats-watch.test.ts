import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { NatsWatch, natsUrlForLog } from './nats-watch.js';

/** A connection whose status events the test pushes. */
function fakeConnection(): { nc: NatsConnection; push(type: string): void } {
  const waiting: ((v: IteratorResult<{ type: string }>) => void)[] = [];
  const queued: { type: string }[] = [];
  const nc = {
    status: () => ({
      [Symbol.asyncIterator]: () => ({
        next: () =>
          new Promise<IteratorResult<{ type: string }>>((resolve) => {
            const e = queued.shift();
            if (e) resolve({ value: e, done: false });
            else waiting.push(resolve);
          }),
      }),
    }),
  } as unknown as NatsConnection;
  return {
    nc,
    push: (type) => {
      const w = waiting.shift();
      if (w) w({ value: { type }, done: false });
      else queued.push({ type });
    },
  };
}

describe('a role waiting for NATS says so', () => {
  let warnings: { obj: Record<string, unknown>; msg: string }[];
  let log: Logger;
  beforeEach(() => {
    vi.useFakeTimers();
    warnings = [];
    log = { warn: (obj: Record<string, unknown>, msg: string) => warnings.push({ obj, msg }) } as unknown as Logger;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a second after it starts waiting, then every 30 s while NATS stays down, with the URL (password masked)', async () => {
    const watch = new NatsWatch('nats://cyborg:s3cret@ctl-1:4222,nats://ctl-2:4222', log);
    expect(watch.problem()).toBe('NATS unreachable at nats://***@ctl-1:4222,nats://ctl-2:4222');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.obj).toEqual({ nats: 'nats://***@ctl-1:4222,nats://ctl-2:4222', option: '[DEFAULT] transport_url (NATS_URL, --nats)' });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(warnings).toHaveLength(3);
    const { nc, push } = fakeConnection();
    watch.connected(nc);
    expect(watch.problem()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(warnings).toHaveLength(3);

    push('disconnect');
    await vi.advanceTimersByTimeAsync(0);
    expect(watch.problem()).toBe('NATS unreachable at nats://***@ctl-1:4222,nats://ctl-2:4222');
    await vi.advanceTimersByTimeAsync(30_000);
    expect(warnings.at(-1)!.msg).toMatch(/^NATS went away: NATS unreachable at nats:\/\/\*\*\*@ctl-1:4222/);
    push('reconnect');
    await vi.advanceTimersByTimeAsync(0);
    expect(watch.problem()).toBeUndefined();
    watch.stop();
  });

  it('masks a token as it masks a password', () => {
    expect(natsUrlForLog('tls://tok3n@nats.example:4222')).toBe('tls://***@nats.example:4222');
    expect(natsUrlForLog('nats://nats.example:4222')).toBe('nats://nats.example:4222');
  });
});
