/**
 * The suite on an OpenStack controller (issue 45): the operator's shell has `admin-openrc`
 * sourced (OS_* pointing at its cloud), a clouds.yaml whose cloud cannot be reached,
 * CYBORG_CONFIG_FILE naming a cyborg.conf with a typo, and another `cyborg` first on the PATH.
 * None of it is the suite's: every test starts without the operator's settings
 * (test/own-env-setup.ts) and runs this checkout's program, so each judges only its own.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { dropOperatorSettings, isOperatorSetting } from '../support/own-env.js';
import { startCliTarget } from './harness.js';

const exec = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

async function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(cmd, args, { cwd: root, env, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe("the suite on a controller judges only its own, not the operator's shell", () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  let dir: string;
  let shell: NodeJS.ProcessEnv;
  let typo: string;
  let clouds: string;

  beforeAll(async () => {
    target = await startCliTarget('controller-host');
    dir = mkdtempSync(join(tmpdir(), 'cyborg-controller-'));
    typo = join(dir, 'cyborg.conf');
    writeFileSync(typo, '[api]\nport = 66x6\n');
    clouds = join(dir, 'config', 'openstack', 'clouds.yaml');
    mkdirSync(join(dir, 'config', 'openstack'), { recursive: true });
    // Port 1 on loopback: a cloud that refuses every connection, at once.
    writeFileSync(
      clouds,
      'clouds:\n  controller:\n    auth:\n      auth_url: http://127.0.0.1:1/v3\n      username: admin\n      password: x\n      project_name: admin\n',
    );
    mkdirSync(join(dir, 'bin'));
    writeFileSync(join(dir, 'bin', 'cyborg'), '#!/bin/sh\necho "another cyborg: $*"\nexit 3\n', { mode: 0o755 });
    shell = {
      ...process.env,
      OS_CLOUD: 'controller',
      OS_AUTH_URL: 'http://127.0.0.1:1/v3',
      OS_USERNAME: 'admin',
      OS_PASSWORD: 'x',
      OS_PROJECT_NAME: 'admin',
      CYBORG_CONFIG_FILE: typo,
      CYBORG_URL: 'http://127.0.0.1:1',
      XDG_CONFIG_HOME: join(dir, 'config'),
      PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}`,
    };
  });
  afterAll(async () => {
    await target?.running.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('every test file starts without OS_* or cyborg option variables', () => {
    expect(Object.keys(process.env).filter(isOperatorSetting)).toEqual([]);
  });

  it("the operator's cloud, unreachable, is what the CLI would sign in to; without their settings it answers from the suite's own target", async () => {
    // What a test that inherited the shell would see: a failure about the operator's cloud, not cyborg.
    const theirs = await run(process.execPath, ['cli/bin.js', 'driver-list', '--url', target.url], shell);
    expect(theirs.code).not.toBe(0);
    expect(theirs.stderr).toContain('127.0.0.1:1');

    const own = { ...shell };
    expect(dropOperatorSettings(own)).toEqual(['CYBORG_CONFIG_FILE', 'CYBORG_URL', 'OS_AUTH_URL', 'OS_CLOUD', 'OS_PASSWORD', 'OS_PROJECT_NAME', 'OS_USERNAME']);
    const ours = await run(process.execPath, ['cli/bin.js', 'driver-list', '--url', target.url], own);
    expect(ours.stderr).toBe('');
    expect([ours.code, ours.stdout]).toEqual([0, expect.stringMatching(/│ generic │ controller-host │/)]);
  });

  it("a cyborg.conf with a typo named by the shell is refused naming that file; the suite's config never reads it", () => {
    expect(() => loadConfig({}, shell)).toThrow(typo);
    const own = { ...shell };
    dropOperatorSettings(own);
    expect(loadConfig({}, own).listen.port).toBe(loadConfig({}, {}).listen.port);
  });

  it("another cyborg first on the PATH: npx runs this checkout's", async () => {
    expect((await run('sh', ['-c', 'cyborg --version'], shell)).stdout).toBe('another cyborg: --version\n');
    const ours = await run('npx', ['cyborg', '--version'], shell);
    expect([ours.code, ours.stdout]).toEqual([0, `${VERSION}\n`]);
  });
});
