import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cyborg, startCliTarget } from '../cli/harness.js';
import type { AcceleratorView } from '../../model/index.js';

/** The operator's maintenance commands against a running all-in-one, checked by output and exit code. */
describe('cyborg accelerator maintenance / host drain', () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  let url: string;
  const T4 = 'cli-host_0000_3b_00_0';
  const run = (...argv: string[]) => cyborg(...argv, '--url', url);

  beforeAll(async () => {
    target = await startCliTarget();
    url = target.url;
  });
  afterAll(async () => {
    await target.running.stop();
  });

  it('marks a device, cancels the mark, and says so clearly when there is nothing to cancel', async () => {
    const marked = await run('accelerator', 'maintenance', T4);
    expect([marked.code, marked.stdout]).toEqual([0, `${T4}: maintenance (no consumer left)\n`]);
    const json = JSON.parse((await run('accelerator', 'show', T4, '--json')).stdout) as AcceleratorView;
    expect(json.tags).toEqual(expect.arrayContaining(['maintenance', 'reserved']));
    const cancelled = await run('accelerator', 'maintenance', T4, '--cancel');
    expect([cancelled.code, cancelled.stdout]).toEqual([0, `${T4}: in service\n`]);
    const twice = await run('accelerator', 'maintenance', T4, '--cancel');
    expect(twice.code).not.toBe(0);
    expect(twice.stderr).toContain('no maintenance mark');
  });

  it('refuses update-driver on a host that is not drained, unless forced', async () => {
    const refused = await run('update-driver', 'generic', '--version', '1.0.1');
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/host cli-host is not drained .*cyborg host drain cli-host.*--force \[host\.not_drained\]/);
    expect(target.ops.calls.map((c) => c.op)).not.toContain('driver-update');
  });

  it('drains a host and cancels the drain; an unknown host is not found', async () => {
    const drained = await run('host', 'drain', 'cli-host');
    expect(drained.code).toBe(0);
    expect(drained.stdout).toMatch(/^host cli-host: drained\n/);
    expect(drained.stdout).toMatch(new RegExp(`│ ${T4}\\s+│ inactive\\s+│ ok\\s+│ maintenance \\(no consumer left\\)`));
    // A driver update waits for the drain: it ran only now that the host is drained.
    expect(target.ops.calls.map((c) => c.op)).not.toContain('driver-update');
    const updated = await run('update-driver', 'generic', '--version', '1.0.1');
    expect([updated.code, updated.stdout]).toEqual([0, 'driver generic@cli-host updated to version 1.0.1\n']);
    const cancelled = await run('host', 'drain', 'cli-host', '--cancel');
    expect([cancelled.code, cancelled.stdout.split('\n')[0]]).toEqual([0, 'host cli-host: drain cancelled']);
    const unknown = await run('host', 'drain', 'nowhere');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/not found/);
  });
});
