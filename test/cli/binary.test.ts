import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCliTarget } from './harness.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

/** The real program, in its own process: the bin entry, exit codes as a shell sees them. */
async function spawnCyborg(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(cmd, args, { cwd: root, env: { ...process.env, CYBORG_URL: '' }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('the cyborg binary', () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  beforeAll(async () => {
    target = await startCliTarget('bin-host');
  });
  afterAll(async () => {
    await target.running.stop();
  });

  it('npx cyborg --help lists the operator commands beside the roles', async () => {
    const r = await spawnCyborg('npx', ['cyborg', '--help']);
    expect(r.code).toBe(0);
    for (const c of [
      'all-in-one',
      'driver-list',
      'install-driver',
      'uninstall-driver',
      'update-driver',
      'service-list',
      'discover-services',
      'attach-instance',
      'detach-instance',
      'accelerator',
    ]) {
      expect(r.stdout).toContain(c);
    }
  });

  it('answers in a shell: a table and exit 0, an unknown driver and exit 3', async () => {
    const list = await spawnCyborg(process.execPath, ['cli/bin.js', 'driver-list', '--url', target.url]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/│ generic │ bin-host │ 1\.0\.0\s+│ installed │/);
    const unknown = await spawnCyborg(process.execPath, ['cli/bin.js', 'install-driver', 'nvidia', '--url', target.url]);
    expect([unknown.code, unknown.stdout]).toEqual([3, '']);
    expect(unknown.stderr).toContain('cyborg: no driver "nvidia". Known drivers: fake@bin-host, generic@bin-host');
  });

  it('exits 2 on a usage error, naming it', async () => {
    const r = await spawnCyborg(process.execPath, ['cli/bin.js', 'uninstall-driver']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("missing required argument 'driver_id'");
  });
});
