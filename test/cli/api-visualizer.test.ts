import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { startCyborg } from './spawn.js';

describe.skipIf(!svc.nats)("the api role's visualizer, on a port browsers open", () => {
  it('a second listener of the same API ([api] ui_port) and one log line saying where to open it', async () => {
    const api = startCyborg(['api', '--nats', svc.nats!, '--prefix', `ui${randomBytes(3).toString('hex')}`, '--port', '0'], { env: { CYBORG_UI_PORT: '0' } });
    try {
      const line = JSON.parse(await api.waitFor(/visualizer: open/, 60_000)) as { url: string; msg: string };
      const base = line.url.replace(/\/ui$/, '');
      expect(line.msg).toBe(`visualizer: open ${base}/ui in a browser (browsers refuse the API's own port)`);
      const ui = await fetch(`${base}/ui`, { redirect: 'manual' });
      expect([ui.status, ui.headers.get('location')]).toEqual([302, '/ui/']);
      // The same application: its health and its API answer there too.
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/cyborg/v1/hosts`)).status).not.toBe(404);
    } finally {
      await api.kill();
    }
  });
});
