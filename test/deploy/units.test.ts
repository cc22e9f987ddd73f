import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyUnits } from '../support/systemd.js';

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
    // /opt/cyborg/bin/cyborg is what the package's install puts there (not on this machine):
    // test/deploy/package.test.ts verifies the units against a real install.
    const notInstalled = /^cyborg-\w+\.service: Command \/opt\/cyborg\/bin\/cyborg is not executable: No such file or directory$/;
    expect((await verifyUnits(ROLES.map(unit))).filter((l) => !notInstalled.test(l))).toEqual([]);
  });

  it.skipIf(!existsSync('/usr/bin/systemd-analyze'))(
    "are judged by what systemd says of them: another unit's finding (a controller's keystone.service) is not theirs, a broken unit of ours is",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'cyborg-units-'));
      try {
        // What Debian's keystone package leaves on a controller: a unit systemd reports on every verify.
        writeFileSync(
          join(dir, 'peer-keystone.service'),
          '[Unit]\nDescription=a unit of another package\nAfter=peer-keystone.service\n[Service]\nExecStart=/bin/true\n',
        );
        const text = readFileSync(unit('api'), 'utf8').replace('[Unit]\n', '[Unit]\nWants=peer-keystone.service\n');
        const ours = join(dir, 'cyborg-api.service');
        const env = { ...process.env, SYSTEMD_UNIT_PATH: `${dir}:` };
        const notInstalled = /^cyborg-api\.service: Command \/opt\/cyborg\/bin\/cyborg is not executable/;

        writeFileSync(ours, text);
        expect((await verifyUnits([ours], env)).filter((l) => !notInstalled.test(l))).toEqual([]);

        writeFileSync(ours, text.replace('[Service]\n', '[Service]\nFrobnicate=yes\n'));
        expect((await verifyUnits([ours], env)).filter((l) => !notInstalled.test(l))).toEqual([
          expect.stringMatching(/cyborg-api\.service:\d+: Unknown key '?Frobnicate'?/),
        ]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
