import { execFile, spawnSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enableAll, startCyborg, type Cyborg } from './harness.js';

/**
 * The real `openstack accelerator` CLI (python3-openstackclient with python3-cyborgclient, from
 * Debian; `.ci/run` installs them) finds the API the way an operator points it at one: an endpoint
 * and version discovery, with no Keystone (`--os-auth-type none`). It must reach the v2 API at the
 * root and under the `/accelerator` prefix devstack-style deployments use.
 */
const run = promisify(execFile);
const cliReady = spawnSync('openstack', ['accelerator', 'device', 'list', '--help'], { stdio: 'ignore' }).status === 0;
const required = process.env.CI === 'true';

describe.skipIf(!cliReady && !required)('the real openstack accelerator CLI, with version discovery', () => {
  let c: Cyborg;
  let endpoint = '';
  beforeAll(async () => {
    c = await startCyborg({ hosts: ['cli-host'] });
    await enableAll(c);
    await c.app.listen({ host: '127.0.0.1', port: 0 });
    endpoint = `http://127.0.0.1:${(c.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await c?.stop();
  });

  const openstack = async (base: string, ...args: string[]) =>
    (await run('openstack', ['--os-auth-type', 'none', '--os-endpoint', base, 'accelerator', ...args, '-f', 'json'], { timeout: 60_000 })).stdout;

  it('lists devices and deployables from the root endpoint', async () => {
    const devices = JSON.parse(await openstack(endpoint, 'device', 'list')) as { type: string; hostname: string }[];
    expect(devices.length).toBeGreaterThan(0);
    expect(devices.every((d) => d.hostname === 'cli-host')).toBe(true);
    expect(new Set(devices.map((d) => d.type))).toContain('FPGA');
    const deployables = JSON.parse(await openstack(endpoint, 'deployable', 'list')) as { name: string }[];
    expect(deployables.length).toBeGreaterThanOrEqual(devices.length);
  });

  it('finds the same API under /accelerator, and creates and deletes a device profile there', async () => {
    const under = `${endpoint}/accelerator`;
    const devices = JSON.parse(await openstack(under, 'device', 'list')) as unknown[];
    expect(devices.length).toBeGreaterThan(0);
    await openstack(under, 'device', 'profile', 'create', 'cli-profile', '[{"resources:FPGA": "1", "trait:CUSTOM_FAKE_DEVICE": "required"}]');
    const profiles = JSON.parse(await openstack(under, 'device', 'profile', 'list')) as { name: string }[];
    expect(profiles.map((p) => p.name)).toContain('cli-profile');
    await run('openstack', ['--os-auth-type', 'none', '--os-endpoint', under, 'accelerator', 'device', 'profile', 'delete', 'cli-profile'], {
      timeout: 60_000,
    });
    const after = JSON.parse(await openstack(under, 'device', 'profile', 'list')) as { name: string }[];
    expect(after.map((p) => p.name)).not.toContain('cli-profile');
  });
});
