import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { NovaNotifier } from './nova.js';
import { EventHub } from '../model/index.js';

function capture(): { log: Logger; lines: { msg: string }[] } {
  const lines: { msg: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, cb) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as { msg: string });
      cb();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

describe('NovaNotifier without a Nova endpoint', () => {
  it('says so once at start, then sends nothing however many binds resolve', async () => {
    const hub = new EventHub();
    const { log, lines } = capture();
    const notifier = new NovaNotifier({
      token: 'admin',
      retries: 1,
      retryDelayMs: 1,
      hub,
      getArq: () => {
        throw new Error('not asked');
      },
      log,
    }).start();
    for (let i = 0; i < 3; i++) hub.publish({ kind: 'arq', id: `arq-${i}`, event: 'done', from: 'BindStarted', to: 'Bound', at: new Date().toISOString() });
    await new Promise((r) => setImmediate(r));
    await notifier.stop();
    expect(lines.filter((l) => l.msg.includes('no Nova endpoint'))).toHaveLength(1);
    expect(lines).toHaveLength(1);
  });
});
