import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CyborgError } from '../../errors/index.js';
import { startGenericHost } from './harness.js';

type Host = Awaited<ReturnType<typeof startGenericHost>>;

describe('driver lifecycle per host, through the conductor', () => {
  let h: Host;
  beforeEach(async () => {
    h = await startGenericHost();
  });
  afterEach(async () => {
    await h.stop();
  });

  const admin = () => h.conductor.driverAdmin;
  const generic = () => h.conductor.listAccelerators({ host: h.host }).filter((a) => a.driver === 'generic');
  const live = () => generic().filter((a) => a.state !== 'removed');

  it('lists the drivers an agent loads as installed at the version they ship', () => {
    expect(
      admin()
        .listDrivers()
        .map((d) => [d.name, d.host, d.state, d.version, d.loaded, d.accelerators]),
    ).toEqual([
      ['fake', 'gpu-host-1', 'installed', '1.0.0', true, 1],
      ['generic', 'gpu-host-1', 'installed', '1.0.0', true, 4],
    ]);
  });

  it('refuses to uninstall a driver while an instance holds one of its accelerators, naming the instance', async () => {
    const t4 = generic().find((a) => a.name.endsWith('0000_3b_00_0'))!;
    await h.conductor.act(t4.id, { type: 'ENABLE' });
    const instance = randomUUID();
    const { arq } = await admin().attachInstance(instance, { resourceClass: 'PGPU' });
    expect(arq.state).toBe('Bound');

    const refused = await admin()
      .uninstallDriver('generic', {})
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CyborgError);
    expect((refused as CyborgError).code).toBe('driver.in_use');
    expect((refused as CyborgError).message).toBe(
      `driver generic on gpu-host-1 is in use: accelerator ${t4.name} (${t4.id}) is attached to instance ${instance}. Detach it first (cyborg detach-instance ${instance}), then uninstall the driver`,
    );
    expect(h.ops.calls.map((c) => c.op)).not.toContain('driver-uninstall');

    await admin().detachInstance(instance);
    const done = await admin().uninstallDriver('generic', {});
    expect(done.state).toBe('uninstalled');
    // The enabled T4 was given back (vfio-pci released) before the driver went, then its accelerators left.
    expect(h.ops.calls.map((c) => c.op)).toEqual(['bind', 'bind', 'release', 'driver-uninstall']);
    expect(live()).toEqual([]);
  });

  it('keeps an uninstall and an update across agent restarts and a conductor restart', async () => {
    await admin().uninstallDriver('generic@gpu-host-1', {});
    await h.restartAgent();
    expect(admin().getDriver('generic').state).toBe('uninstalled');
    expect(h.agent.driverStates.active().map((d) => d.name)).toEqual(['fake']);
    expect(live()).toEqual([]);

    const installed = await admin().installDriver('generic', { version: '1.2.0' });
    expect([installed.state, installed.version, installed.accelerators]).toEqual(['installed', '1.2.0', 4]);
    expect(live().map((a) => a.state)).toEqual(['inactive', 'inactive', 'inactive', 'inactive']);

    const updated = await admin().updateDriver('generic', { version: '1.3.0', force: true });
    expect(updated.version).toBe('1.3.0');
    expect(h.ops.calls.map((c) => `${c.op} ${c.args.join(' ')}`)).toEqual(['driver-install 1.2.0', 'driver-update 1.3.0']);

    await h.restartAgent();
    expect(h.agent.driverStates.info()).toEqual([
      { name: 'generic', version: '1.3.0' },
      { name: 'fake', version: '1.0.0' },
    ]);
    expect(h.conductor.getHost(h.host).drivers).toContainEqual({ name: 'generic', version: '1.3.0' });

    await h.restartConductor();
    expect(admin().getDriver('generic').version).toBe('1.3.0');
    expect(admin().getDriver('generic').state).toBe('installed');
  });

  it('answers an install of what is installed with the driver as it is, and refuses a version change that is an update', async () => {
    await expect(admin().installDriver('generic', {})).resolves.toMatchObject({ state: 'installed', version: '1.0.0' });
    expect(h.ops.calls).toEqual([]);
    await expect(admin().installDriver('generic', { version: '2.0.0' })).rejects.toMatchObject({ code: 'driver.already_installed' });
  });

  it('names what it knows when asked for a driver it does not', async () => {
    await expect(admin().installDriver('nvidia', {})).rejects.toMatchObject({
      code: 'driver.not_found',
      message: 'no driver "nvidia". Known drivers: fake@gpu-host-1, generic@gpu-host-1 (see: cyborg driver-list)',
    });
    await expect(admin().updateDriver('generic', { host: 'elsewhere' })).rejects.toMatchObject({ code: 'driver.not_found' });
  });

  it("records a failed install with the driver's reason and leaves the driver as it was", async () => {
    await admin().uninstallDriver('generic', {});
    h.generic.ops.lifecycle = async () => {
      throw new Error('modprobe vfio-pci: Operation not permitted');
    };
    await expect(admin().installDriver('generic', {})).rejects.toMatchObject({
      code: 'driver.failed',
      message: 'install of driver generic on gpu-host-1 failed: modprobe vfio-pci: Operation not permitted',
    });
    const d = admin().getDriver('generic');
    expect([d.state, d.lastError?.op, d.lastError?.reason]).toEqual(['uninstalled', 'install', 'modprobe vfio-pci: Operation not permitted']);
  });
});

describe('services of the backends', () => {
  let h: Host;
  beforeEach(async () => {
    h = await startGenericHost();
  });
  afterEach(async () => {
    await h.stop();
  });

  it('lists nothing until discovered, then what each installed driver offers, and keeps it across a conductor restart', async () => {
    expect(h.conductor.driverAdmin.listServices()).toEqual([]);
    const found = await h.conductor.driverAdmin.discoverServices({});
    expect(found.failures).toEqual([]);
    expect(found.services.map((s) => [s.driver, s.address, s.kind, s.name])).toEqual([
      ['generic', '0000:3b:00.0', 'mdev_type', 'nvidia-222'],
      ['generic', '0000:3b:00.0', 'mdev_type', 'nvidia-223'],
      ['generic', '0000:3b:00.0', 'mdev_type', 'nvidia-230'],
      ['generic', '0000:86:00.0', 'vf', '0000:86:00.1'],
      ['generic', '0000:86:00.0', 'vf', '0000:86:00.2'],
      ['generic', '0000:af:00.0', 'passthrough', '0000:af:00.0'],
    ]);
    await h.restartConductor();
    expect(h.conductor.driverAdmin.listServices({ driver: 'generic' })).toHaveLength(6);
  });
});
