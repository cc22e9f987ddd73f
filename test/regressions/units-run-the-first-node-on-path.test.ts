/**
 * Issue 42: the systemd units ran `/opt/cyborg/bin/cyborg`, whose `#!/usr/bin/env node` takes the
 * first `node` on systemd's PATH (Debian's v20 on a controller), not the Node the install checked:
 * they failed every 2 s. And their `Documentation=` named /opt/cyborg/README.md, where no install
 * puts it. Now the package's postinstall (deploy/systemd/write-units.mjs) writes the Node npm ran
 * under and the package's own paths into the units it ships; a checkout's units stay as committed.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyUnits } from '../support/systemd.js';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;
const ROLES = ['api', 'conductor', 'agent'];
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const SCRIPT = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.postinstall;

const prefix = mkdtempSync(join(tmpdir(), 'cyborg-units-'));
afterAll(() => rmSync(prefix, { recursive: true, force: true }));

/** The files of an installed package that the units and the script need, where `npm install -g --prefix` puts them. */
function installedPackage(): string {
  const pkg = join(prefix, 'lib', 'node_modules', 'cyborg');
  mkdirSync(join(pkg, 'cli'), { recursive: true });
  copyFileSync(join(ROOT, 'cli', 'bin.js'), join(pkg, 'cli', 'bin.js'));
  copyFileSync(join(ROOT, 'package.json'), join(pkg, 'package.json'));
  copyFileSync(join(ROOT, 'README.md'), join(pkg, 'README.md'));
  cpSync(join(ROOT, 'deploy', 'systemd'), join(pkg, 'deploy', 'systemd'), { recursive: true });
  return pkg;
}

const line = (text: string, key: string) =>
  text
    .split('\n')
    .find((l) => l.startsWith(`${key}=`))
    ?.slice(key.length + 1);

describe("the units run the install's Node", () => {
  it('is the package postinstall', () => {
    expect(SCRIPT).toBe('node deploy/systemd/write-units.mjs');
  });

  it("an install writes the Node npm ran under and the package's paths; the unit's command runs with no node on the PATH", async () => {
    const pkg = installedPackage();
    // As npm runs a lifecycle script: in the package's folder, npm_node_execpath naming its Node.
    await run(process.execPath, ['deploy/systemd/write-units.mjs'], { cwd: pkg, env: { PATH: '/usr/bin:/bin', npm_node_execpath: process.execPath } });
    for (const role of ROLES) {
      const text = readFileSync(join(pkg, 'deploy', 'systemd', `cyborg-${role}.service`), 'utf8');
      expect(line(text, 'ExecStart')).toBe(
        `${process.execPath} --max-semi-space-size=16 ${pkg}/cli/bin.js ${role} --config-file /etc/cyborg/cyborg.conf --config-dir /etc/cyborg/cyborg-${role}.conf.d`,
      );
      expect(line(text, 'Documentation')).toBe(`file://${pkg}/README.md`);
      expect(existsSync(line(text, 'Documentation')!.replace('file://', ''))).toBe(true);
    }
    // What systemd would start, with a PATH that has no node at all: the version answers.
    const argv = line(readFileSync(join(pkg, 'deploy', 'systemd', 'cyborg-api.service'), 'utf8'), 'ExecStart')!.split(' ');
    const { stdout } = await run(argv[0]!, [...argv.slice(1, 3), '--version'], { env: { PATH: '/nonexistent' } });
    expect(stdout).toBe(`${VERSION}\n`);
    if (existsSync('/usr/bin/systemd-analyze')) {
      const units = ROLES.map((role) => join(pkg, 'deploy', 'systemd', `cyborg-${role}.service`));
      expect(await verifyUnits(units)).toEqual([]);
    }
  });

  it('in a checkout (npm install in a clone) it changes nothing: the committed units are sources', async () => {
    const before = ROLES.map((role) => readFileSync(join(ROOT, 'deploy', 'systemd', `cyborg-${role}.service`), 'utf8'));
    await run(process.execPath, ['deploy/systemd/write-units.mjs'], { cwd: ROOT, env: { PATH: '/usr/bin:/bin', npm_node_execpath: process.execPath } });
    expect(ROLES.map((role) => readFileSync(join(ROOT, 'deploy', 'systemd', `cyborg-${role}.service`), 'utf8'))).toEqual(before);
  });
});
