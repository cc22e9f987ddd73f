import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTree, GPU_HOST } from '../fixtures/sysfs/build.js';
import { FAKE_UDEVADM, fakeUdevadm, GPU_HOST_WITHOUT_V100, recorded, V100 } from '../fixtures/udevadm/recorded.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { Deployment } from './deployment.js';

/**
 * An operator runs `cyborg agent` with `enabled_drivers = generic_driver` on a compute host whose
 * periodic scan is a minute. udevadm (here the stand-in, through `[agent] udevadm_command`)
 * tells the agent of a card plugged in, and the API shows it within seconds. On a second host
 * `[agent] hotplug = off` runs no udevadm at all.
 */
describe.skipIf(!svc.nats)('hot-plug in the agent role, over NATS', { timeout: 300_000 }, () => {
  let dep: Deployment;
  const hostEnv = (host: string) => {
    const root = join(dep.dir, `${host}-sys`);
    const udevDir = join(dep.dir, `${host}-udev`);
    mkdirSync(udevDir, { recursive: true });
    const udev = fakeUdevadm(udevDir);
    buildTree(root, GPU_HOST_WITHOUT_V100, ['vfio-pci']);
    return {
      root,
      udev,
      env: {
        CYBORG_ENABLED_DRIVERS: 'generic_driver',
        CYBORG_GENERIC_SYSFS_ROOT: root,
        CYBORG_GENERIC_HOST_OPS: 'simulate',
        CYBORG_UDEVADM_COMMAND: FAKE_UDEVADM,
        ...udev.env,
      },
    };
  };

  beforeAll(async () => {
    dep = new Deployment(svc.nats!);
    await dep.conductor('conductor-hotplug');
  }, 180_000);
  afterAll(async () => {
    await dep?.stop();
  });

  it('shows a card plugged into a running host within seconds, not at the next scan', async () => {
    dep.logsOnFailure();
    const h = hostEnv('hp-node');
    const agent = await dep.agent('hp-node', h.env);
    const api = await dep.api();
    await eventually(() => api.listAccelerators({ host: 'hp-node' }).length === 3, { what: 'the three accelerators of hp-node' });
    await eventually(() => h.udev.runs().length === 1, { what: 'udevadm following kernel events' });
    expect(h.udev.runs()[0]!.slice(1)).toEqual(['monitor', '--kernel', '--property', '--subsystem-match=pci', '--subsystem-match=mdev']);

    buildTree(h.root, GPU_HOST, ['vfio-pci']);
    const plugged = Date.now();
    h.udev.kernelSays(recorded('v100-plug.events'));
    await eventually(() => api.listAccelerators({ host: 'hp-node' }).some((a) => a.name === `hp-node_${V100.replace(/[:.]/g, '_')}`), {
      what: 'the V100 in the API',
      timeoutMs: 20_000,
    });
    expect(Date.now() - plugged).toBeLessThan(10_000);
    expect(agent.has((l) => l.msg === 'hot-plug: kernel events; discovering now' && (l.devices as string[]).includes(V100))).toBe(true);
  });

  it('runs no udevadm where the operator turned hot-plug off', async () => {
    dep.logsOnFailure();
    const h = hostEnv('cold-node');
    const agent = await dep.agent('cold-node', { ...h.env, CYBORG_HOTPLUG: 'off' });
    expect(h.udev.runs()).toEqual([]);
    expect(agent.has((l) => typeof l.msg === 'string' && l.msg.startsWith('hot-plug:'))).toBe(false);
  });
});
