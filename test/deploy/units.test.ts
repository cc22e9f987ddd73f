import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROLES = ['api', 'conductor', 'agent'];
const unit = (role: string): string => new URL(`../../deploy/systemd/cyborg-${role}.service`, import.meta.url).pathname;

describe('the systemd units of a production install', () => {
  it.each(ROLES)(
    'cyborg-%s runs its role from the package install, with the config file and its own drop-in directory, as the cyborg user, hardened',
    (role) => {
      const text = readFileSync(unit(role), 'utf8');
      expect(text).toContain(`ExecStart=/opt/cyborg/bin/cyborg ${role} --config-file /etc/cyborg/cyborg.conf --config-dir /etc/cyborg/cyborg-${role}.conf.d`);
      expect(text).toMatch(/^User=cyborg$/m);
      for (const option of ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'ProtectHome=yes', 'PrivateTmp=yes']) expect(text).toContain(option);
    },
  );

  it.skipIf(!existsSync('/usr/bin/systemd-analyze'))('pass systemd-analyze verify', async () => {
    // It exits 1 on the missing executable alone; what it says is checked below.
    const { stdout, stderr } = await run('systemd-analyze', ['verify', '--man=no', ...ROLES.map(unit)]).catch((err: { stdout: string; stderr: string }) => err);
    // /opt/cyborg/bin/cyborg is what the package's install puts there (not on this machine):
    // test/deploy/package.test.ts verifies the units against a real install.
    const notInstalled = /^cyborg-\w+\.service: Command \/opt\/cyborg\/bin\/cyborg is not executable: No such file or directory$/;
    expect(`${stdout}${stderr}`.split('\n').filter((l) => l && !notInstalled.test(l))).toEqual([]);
  });
});
