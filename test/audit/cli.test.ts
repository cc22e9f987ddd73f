import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../model/index.js';
import { cyborg, startCliTarget } from '../cli/harness.js';

/** `cyborg audit` against a running all-in-one: what the operator did, filtered and limited. */
describe('cyborg audit', () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  const run = (...argv: string[]) => cyborg(...argv, '--url', target.url);
  const T4 = 'cli-host_0000_3b_00_0';

  beforeAll(async () => {
    target = await startCliTarget();
    expect((await run('accelerator', 'enable', T4)).code).toBe(0);
    expect((await run('uninstall-driver', 'fake')).code).toBe(0);
  });
  afterAll(async () => {
    await target.running.stop();
  });

  it('shows the enable and the driver uninstall, newest first, as a table and as JSON', async () => {
    const table = await run('audit', '--host', 'cli-host');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/│ AT\s+│ WHO\s+│ PROJECT │ KIND\s+│ ID\s+│ HOST\s+│ EVENT\s+│ FROM → TO\s+│/);
    expect(table.stdout).toMatch(/│ cli\s+│\s+│ accelerator │ \S+\s+│ cli-host │ ENABLE\s+│ inactive → installing/);

    const drivers = JSON.parse((await run('audit', '--host', 'cli-host', '--action', 'uninstall', '--json')).stdout) as AuditEntry[];
    expect(drivers.map((e) => [e.kind, e.from, e.to, e.actor])).toEqual([['driver', 'installed', 'uninstalling', 'cli']]);
  });

  it('--limit follows the next links up to that many rows, and says when nothing matches', async () => {
    const all = JSON.parse((await run('audit', '--json', '--limit', '1000')).stdout) as AuditEntry[];
    expect(all.length).toBeGreaterThan(3);
    const three = JSON.parse((await run('audit', '--json', '--limit', '3')).stdout) as AuditEntry[];
    expect(three).toEqual(all.slice(0, 3));
    const none = await run('audit', '--user', 'nobody');
    expect([none.code, none.stdout]).toEqual([0, 'Nothing in the audit log matches.\n']);
  });
});
