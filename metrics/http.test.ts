import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { startHealthServer } from './http.js';
import { Metrics } from './index.js';

describe('the health and metrics listener of a role', () => {
  it('when its port is taken, says so in a warning and lets the role go on', async () => {
    const lines: { level: number; msg: string; port?: number }[] = [];
    const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as never) });
    const opts = { address: '127.0.0.1', metrics: new Metrics('conductor'), healthy: () => ({ ok: true }), log };
    const first = await startHealthServer({ ...opts, port: 0 });
    expect(first).toBeDefined();
    const second = await startHealthServer({ ...opts, port: first!.port, metrics: new Metrics('agent') });
    expect(second).toBeUndefined();
    expect(lines.at(-1)).toMatchObject({ level: 40, port: first!.port, msg: expect.stringContaining('could not bind; going on without it') });
    await first!.close();
  });
});
