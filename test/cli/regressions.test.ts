import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../cli/main.js';
import { loadConfig } from '../../config/index.js';
import { FakeDriver } from '../../drivers/fake/index.js';
import { cyborg, startCliTarget } from './harness.js';
import { cyborgProcess } from './spawn.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Regressions of the CLI, each named after what an operator saw, on the real program (its --version included). */
describe('cyborg CLI regressions', () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  const run = (...argv: string[]) => cyborg(...argv, '--url', target.url);
  beforeAll(async () => {
    target = await startCliTarget('reg-host');
  });
  afterAll(async () => {
    await target.running.stop();
  });

  it("update-driver / install-driver --version 1.1.0 set the driver's version, not print the program's", async () => {
    // `cyborg --version` names the release, then the schema and the protocol (issue 41).
    expect(await cyborg('--version')).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(new RegExp(`^cyborg ${VERSION.replace(/\./g, '\\.')} \\(schema `)),
    });
    const up = await run('update-driver', 'generic', '--version', '1.1.0', '--force');
    expect(up).toMatchObject({ code: 0, stdout: expect.stringContaining('updated to version 1.1.0') });
    expect(up.stdout).not.toContain(`cyborg ${VERSION} (schema`);
    await run('uninstall-driver', 'generic');
    expect(await run('install-driver', 'generic', '--version', '1.2.0')).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('installed, version 1.2.0'),
    });
  });

  it('--timeout abc is one usage line, exit 2, not a stack trace', async () => {
    const r = await run('driver-list', '--timeout', 'abc');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: option '--timeout <seconds>' argument 'abc' is invalid\. a number of seconds is wanted\n/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('audit --limit 0 (or -5) is one usage line, exit 2, not a stack trace', async () => {
    for (const limit of ['0', '-5', '2.5']) {
      const r = await run('audit', '--limit', limit);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^error: option '--limit <n>' argument '${limit}' is invalid\\. a positive integer is wanted\\n`));
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    expect((await run('audit', '--limit', '1')).code).toBe(0);
  });

  it('host layout with neither --mig nor --vfs says to give one, exit 2 (bad usage, not an unexpected error)', async () => {
    const r = await run('host', 'layout', 'reg-host', '0000:3b:00.0');
    expect(r).toMatchObject({ code: 2, stderr: `cyborg: give exactly one of --mig <profiles> or --vfs <count>\n  deployment: ${target.url} (no sign-in)\n` });
  });

  it('--fake-gpus 1 is one fake GPU in all, as the help says (it said "extra fake GPUs" and left one of the two)', async () => {
    const defaults = loadConfig({}, {}).fake;
    for (const role of ['all-in-one', 'agent']) {
      const help = buildProgram()
        .commands.find((c) => c.name() === role)!
        .helpInformation()
        .replace(/\s+/g, ' ');
      expect(help).toMatch(new RegExp(`--fake-gpus <n> the number of fake GPUs, beside the fake FPGA \\(.*default ${defaults.gpus}\\)`));
      expect(help).toMatch(new RegExp(`--fake-nics <n> the number of fake NICs, each with its VFs \\(.*default ${defaults.nics}\\)`));
      expect(help).not.toMatch(/extra/);
    }
    const devices = await new FakeDriver({ host: 'reg-fake', gpus: 1, nics: 1 }).discover();
    expect(devices.filter((d) => d.type === 'GPU')).toHaveLength(1);
    expect(devices.filter((d) => d.type === 'NIC')).toHaveLength(1);
  });

  it('an unknown command is bad usage, exit 2, at the top as under a group (cyborg bogus exited 1)', async () => {
    const [top, group, real] = await Promise.all([cyborg('bogus'), cyborg('accelerator', 'bogus'), cyborgProcess(['bogus'])]);
    for (const r of [top, group, real]) {
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^error: unknown command 'bogus'\n/);
    }
    expect(real.stderr).toContain('Usage: cyborg [options] [command]');
    expect(await cyborgProcess(['--help'])).toMatchObject({ code: 0, stdout: expect.stringContaining('Usage: cyborg') });
  });

  it('capacity of a class, trait or host the fleet does not have: exit 2 naming the field, 3 for the host, as docs/cli.md says', async () => {
    const [rc, trait, host] = await Promise.all([
      run('capacity', '--resource-class', 'BOGUS'),
      run('capacity', '--trait', 'CUSTOM_NOPE'),
      run('capacity', '--host', 'nowhere'),
    ]);
    expect(rc).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^cyborg: resourceClass BOGUS: no accelerator has this resource class .*\[request\.invalid\]\n/),
    });
    expect(trait).toMatchObject({ code: 2, stderr: expect.stringMatching(/^cyborg: trait CUSTOM_NOPE: .*\[request\.invalid\]\n/) });
    expect(host.code).toBe(3);
    const doc = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8');
    expect(doc).toMatch(/\| `capacity .*A class or trait the fleet does not have: exit 2 naming the field.*an unknown host: exit 3 \|/);
  });

  it('detach --instance of an instance the accelerator does not hold names that, and what it holds', async () => {
    const fpga = 'reg-host_FakeDevice';
    await run('accelerator', 'enable', fpga);
    await run('accelerator', 'program', fpga, '--function', 'gzip');
    const vm = randomUUID();
    await run('accelerator', 'attach', fpga, '--instance', vm);
    const wrong = randomUUID();
    const r = await run('accelerator', 'detach', fpga, '--instance', wrong);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^cyborg: instance ${wrong} is not attached to ${fpga}: it holds instance ${vm} \\(handle [0-9a-f-]+\\)\\n`));
    expect((await run('accelerator', 'detach', fpga, '--instance', vm)).stdout).toBe(`${fpga}: attached → programmed\n`);
  });

  it('--state bogus lists the states there are and exits 2, not "No accelerators." and 0', async () => {
    const r = await run('accelerator', 'list', '--state', 'bogus');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^error: option '--state <state>' argument 'bogus' is invalid\. Allowed choices are inactive, .*ready.*attached.*error.*removed\.\n/,
    );
    expect((await run('accelerator', 'list', '--state', 'ready')).code).toBe(0);
  });
});
