/**
 * Issue 39: Placement was offered what no bind could serve. A MIG instance already used by an
 * mdev the agent did not make was still offered (the bind then failed, `mig_not_servable`); vGPU
 * types configured per VF (Cyborg's way: `[vgpu_<type>] device_addresses` naming the VFs) were
 * offered once per VF, not within the type's `max_instance` (A10-4Q 32 times for 6). Now the
 * NVIDIA driver offers only what it can make, and a deployable with nothing to serve keeps its
 * provider with its one unit reserved. The real NVIDIA driver on sysfs trees, through a real
 * agent and conductor to the real Placement.
 */
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { NvidiaGpuDriver } from '../../drivers/nvidia/index.js';
import type { Capacity } from '../../model/index.js';
import { buildHost, NVIDIA_MIG_MIXED_HOST } from '../fixtures/vendors/hosts.js';
import { buildTree, hostBridge, port, type FnSpec } from '../fixtures/sysfs/build.js';
import { deleteTree, placementClient, uniqueHost } from '../placement/harness.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';

const fixtures = fileURLToPath(new URL('../fixtures/vendors/', import.meta.url));
const FAKE_SMI = join(fixtures, 'bin', 'fake-nvidia-smi.sh');

/** An A10 whose eight VFs carry the A10-4Q as an mdev type (vGPU 13–16), as NVIDIA's A10 table gives it: 6 at most per GPU. */
function a10Host(): { root: string; vfs: string[] } {
  // Functions 4..7 of device 00, then 0..3 of device 01: eight distinct VF addresses.
  const vfs: FnSpec[] = Array.from({ length: 8 }, (_, i) => ({
    address: i < 4 ? `0000:17:00.${4 + i}` : `0000:17:01.${i - 4}`,
    cls: '030200',
    vendor: '10de',
    device: '2236',
    subDevice: '1482',
    numa: 0,
    iommu: 17 + i,
    driver: 'nvidia',
    mdev: [
      {
        id: 'nvidia-590',
        name: 'NVIDIA A10-4Q',
        description: 'num_heads=4, frl_config=60, framebuffer=4096M, max_resolution=7680x4320, max_instance=6',
        available: 1,
      },
    ],
  }));
  const spec: FnSpec[] = [
    hostBridge,
    port('0000:16:00.0', 0, 15),
    {
      address: '0000:17:00.0',
      port: '0000:16:00.0',
      cls: '030200',
      vendor: '10de',
      device: '2236',
      subDevice: '1482',
      numa: 0,
      iommu: 16,
      driver: 'nvidia',
      bootVga: false,
      sriov: { total: 32, offset: 4, stride: 1, vfDevice: '2236', vfs },
    },
  ];
  const root = join(mkdtempSync(join(tmpdir(), 'cyborg-a10-per-vf-')), 'sys');
  buildTree(root, spec, ['vfio-pci']);
  return { root, vfs: vfs.map((v) => v.address) };
}

describe.skipIf(!svc.placement)('offered but not servable', () => {
  const stacks: Stack[] = [];
  const hosts: string[] = [];
  afterAll(async () => {
    for (const s of stacks) await s.stop();
    const client = placementClient(svc.placement!);
    for (const h of hosts) await deleteTree(client, h);
  });

  const start = async (driver: (host: string) => NvidiaGpuDriver): Promise<Stack & { host: string }> => {
    const host = uniqueHost('nsv');
    hosts.push(host);
    const s = await startStack({ hosts: [host], drivers: (h) => [driver(h)], api: true, placement: { url: svc.placement!, createRoots: true } });
    stacks.push(s);
    return Object.assign(s, { host });
  };
  const inSync = (s: Stack): Promise<boolean> =>
    eventually(() => s.conductor.listAccelerators().every((a) => s.sync.status(a.id)?.status === 'in_sync'), {
      what: 'every accelerator in sync',
      timeoutMs: 30_000,
    });
  /** Placement's free units of a provider: total − reserved − used. */
  const freeIn = async (s: Stack, rpUuid: string): Promise<number> => {
    const [inv, use] = await Promise.all([s.placement.getInventories(rpUuid), s.placement.getUsages(rpUuid)]);
    return Object.entries(inv.inventories).reduce((n, [rc, r]) => n + r.total - r.reserved - (use[rc] ?? 0), 0);
  };

  it('a MIG instance an mdev it did not make already holds is not offered to Placement', async () => {
    const root = buildHost(NVIDIA_MIG_MIXED_HOST, 'nvidia-mig-foreign');
    // A GRID A100-3-20C another agent made (an OpenStack Cyborg agent before the move): it holds the A100's one 3g.20gb instance.
    const foreign = '7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
    const type = join(root, 'bus/pci/devices/0000:1b:00.4/mdev_supported_types/nvidia-476');
    mkdirSync(join(type, 'devices', foreign), { recursive: true });
    writeFileSync(join(type, 'available_instances'), '0\n');
    const smi = join(mkdtempSync(join(tmpdir(), 'cyborg-smi-')), 'a100-h100');
    cpSync(join(fixtures, 'nvidia-smi', 'a100-h100'), smi, { recursive: true });
    const s = await start((host) => new NvidiaGpuDriver({ host, sysfsRoot: root, nvidiaSmi: ['sh', FAKE_SMI, smi] }));
    for (const a of s.conductor.listAccelerators()) await s.conductor.act(a.id, { type: 'ENABLE' });
    await eventually(async () => (await freeIn(s, s.conductor.listAccelerators().find((a) => a.name.endsWith('MIG_2g.10gb'))!.rpUuid)) === 1, {
      what: 'the free MIG profile offered',
      timeoutMs: 15_000,
    });
    await inSync(s);
    const taken = s.conductor.listAccelerators().find((a) => a.name.endsWith('_0000:1b:00.0_MIG_3g.20gb'))!;
    const free = s.conductor.listAccelerators().find((a) => a.name.endsWith('_0000:1b:00.0_MIG_2g.10gb'))!;
    expect(taken.capacity).toBe(0);
    expect(await freeIn(s, taken.rpUuid)).toBe(0);
    // Its sibling profile, whose instance nobody holds, is offered as before.
    expect(free.capacity).toBe(1);
    expect(await freeIn(s, free.rpUuid)).toBe(1);
    const c = (await s.app.inject({ method: 'GET', url: '/cyborg/v1/capacity' })).json() as Capacity;
    expect(c.fleet.find((x) => x.resourceClass === 'CUSTOM_MIG_3G_20GB')).toMatchObject({ free: 0 });
  });

  it('an A10-4Q configured on each of eight VFs is offered 6 times, its max_instance, not 8', async () => {
    const { root, vfs } = a10Host();
    const s = await start((host) => new NvidiaGpuDriver({ host, sysfsRoot: root, vgpuTypes: { 'nvidia-590': vfs } }));
    const a10 = s.conductor.listAccelerators().filter((a) => a.resourceClass === 'VGPU');
    expect(a10).toHaveLength(8);
    expect(a10.reduce((n, a) => n + a.capacity, 0)).toBe(6);
    for (const a of a10) await s.conductor.act(a.id, { type: 'ENABLE' });
    const offered = async (): Promise<number> => (await Promise.all(a10.map((a) => freeIn(s, a.rpUuid)))).reduce((x, y) => x + y, 0);
    await eventually(async () => (await offered()) === 6, { what: 'six A10-4Q offered in Placement', timeoutMs: 15_000 });
    await inSync(s);
    expect(await offered()).toBe(6);
    // The PF whose VFs are vGPUs is not offered whole besides them: a passthrough would take them all.
    expect(s.conductor.listAccelerators().map((a) => a.name)).not.toContain(`${s.host}_0000:17:00.0`);
    const c = (await s.app.inject({ method: 'GET', url: '/cyborg/v1/capacity' })).json() as Capacity;
    expect(c.fleet.find((x) => x.resourceClass === 'VGPU')).toMatchObject({ free: 6 });
  });
});
