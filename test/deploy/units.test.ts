import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROLES = ['api', 'conductor', 'agent'];
const unit = (role: string): string => new URL(`../../deploy/systemd/cyborg-${role}.service`, import.meta.url).pathname;

describe('the systemd units of a production install', () => {
  it.each(ROLES)('cyborg-%s runs its role from the build, with the config file, as the cyborg user, hardened', (role) => {
    const text = readFileSync(unit(role), 'utf8');
    expect(text).toContain(`ExecStart=/usr/bin/node --max-semi-space-size=16 /opt/cyborg/cli/bin.js ${role} --config-file /etc/cyborg/cyborg.conf --config-dir /etc/cyborg/cyborg-${role}.conf.d`);
    expect(text).toMatch(/^User=cyborg$/m);
    for (const option of ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'ProtectHome=yes', 'PrivateTmp=yes']) expect(text).toContain(option);
  });

  it.skipIf(!existsSync('/usr/bin/systemd-analyze'))('pass systemd-analyze verify', async () => {
    const { stdout, stderr } = await run('systemd-analyze', ['verify', '--man=no', ...ROLES.map(unit)]);
    expect(`${stdout}${stderr}`).toBe('');
  });
});
