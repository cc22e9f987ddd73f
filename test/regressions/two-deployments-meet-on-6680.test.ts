/**
 * Issue 42: the api role opened a second listener for the visualizer on 6680 by default — the
 * all-in-one's port and the CLI's default. On a machine where an api role ran, `npm start` failed
 * on an option the user never set, and `cyborg accelerator list` with no flags answered with the
 * other deployment's accelerators, exit 0. Now the api role opens that listener only when asked,
 * and the CLI names the deployment it talks to in `--verbose` and in every error.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, PORTS } from '../../config/index.js';
import { svc } from '../services.js';
import { cyborg, startCliTarget } from '../cli/harness.js';
import { startCyborg } from '../cli/spawn.js';

describe('two deployments on one machine never meet on 6680', () => {
  it("the api role's visualizer listener is off unless asked", () => {
    expect(loadConfig({}, {}, { role: 'api' }).listen).toMatchObject({ port: PORTS.api, uiPort: -1 });
    expect(loadConfig({}, { CYBORG_UI_PORT: '6681' }, { role: 'api' }).listen.uiPort).toBe(6681);
    expect(loadConfig({}, {}, { role: 'all-in-one' }).listen).toMatchObject({ port: PORTS.allInOne, uiPort: -1 });
  });

  it.skipIf(!svc.nats)('an api role started with no ui_port opens one listener and says nothing of a visualizer', async () => {
    const api = startCyborg(['api', '--nats', svc.nats!, '--prefix', `m${randomBytes(3).toString('hex')}`, '--port', '0']);
    try {
      await api.waitFor(/api role up/, 60_000);
      expect(api.output()).not.toMatch(/visualizer: open/);
    } finally {
      await api.kill();
    }
  });

  describe('the CLI names the deployment it talks to', () => {
    let target: Awaited<ReturnType<typeof startCliTarget>>;
    beforeAll(async () => {
      target = await startCliTarget('meet-host');
    });
    afterAll(async () => {
      await target.running.stop();
    });

    it('--verbose says where, before the answer', async () => {
      const r = await cyborg('accelerator', 'list', '--url', target.url, '--verbose');
      expect(r.code).toBe(0);
      expect(r.stderr).toBe(`cyborg: talking to ${target.url} (no sign-in)\n`);
      expect(r.stdout).toContain('meet-host');
    });

    it('every error ends naming the deployment', async () => {
      const missing = await cyborg('accelerator', 'show', 'nosuch', '--url', target.url);
      expect(missing.code).toBe(3);
      expect(missing.stderr.split('\n').at(-2)).toBe(`  deployment: ${target.url} (no sign-in)`);
      const closed = await cyborg('accelerator', 'list', '--url', 'http://127.0.0.1:1');
      expect(closed.code).toBe(6);
      expect(closed.stderr).toMatch(/\n {2}deployment: http:\/\/127\.0\.0\.1:1 \(no sign-in\)\n$/);
    });
  });
});
