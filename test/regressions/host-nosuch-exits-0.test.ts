/**
 * Issue 42: `cyborg accelerator list --host nosuch` printed "No accelerators." and exited 0, so a
 * misspelt host (or another deployment's) looked like an empty one. Now it is the API's 404 for
 * that host, exit 3.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cyborg, startCliTarget } from '../cli/harness.js';

describe('accelerator list --host names a host nobody knows', () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  beforeAll(async () => {
    target = await startCliTarget('known-host');
  });
  afterAll(async () => {
    await target?.running.stop();
  });

  it('exit 3 for an unknown host; a known one lists its accelerators', async () => {
    const r = await cyborg('accelerator', 'list', '--host', 'nosuch', '--url', target.url);
    expect([r.code, r.stdout]).toEqual([3, '']);
    expect(r.stderr).toMatch(/^cyborg: .*nosuch.* \[host\.not_found\]\n/);
    const known = await cyborg('accelerator', 'list', '--host', 'known-host', '--url', target.url);
    expect(known.code).toBe(0);
    expect(known.stdout).toContain('known-host');
  });
});
