import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { IntelNicDriver } from '../../drivers/nic/index.js';
import { NvidiaGpuDriver } from '../../drivers/nvidia/index.js';
import { IntelQatDriver } from '../../drivers/qat/index.js';
import type { AcceleratorView } from '../../model/index.js';
import { NIC_HOST, NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { startStack, type Stack } from '../support/stack.js';
import { SysfsKernel } from '../support/sysfs-kernel.js';

/**
 * Reboots of compute hosts running the vendor drivers on their sysfs fixtures, through the real
 * conductor and agent: the host comes back re-imaged (no agent cache), the kernel has forgotten
 * what the drivers made for the instances, and the conductor has it made again from its records.
 */
const base = '/cyborg/v1';
const vm1 = '2b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e11';
const HOST = 'compute-1';

let s: Stack;
afterEach(async () => {
  await s?.stop();
});

const view = (id: string): AcceleratorView => s.conductor.getAccelerator(id);
const named = (name: string): AcceleratorView => {
  const a = s.conductor.listAccelerators({}).find((x) => x.name === `${HOST}_${name}`);
  if (!a)
    throw new Error(
      `no accelerator ${HOST}_${name} in ${s.conductor
        .listAccelerators({})
        .map((x) => x.name)
        .join(', ')}`,
    );
  return a;
};

async function attach(a: AcceleratorView, vm: string): Promise<AcceleratorView> {
  expect((await s.app.inject({ method: 'POST', url: `${base}/accelerators/${a.id}/enable`, payload: {} })).statusCode).toBe(200);
  const r = await s.app.inject({ method: 'POST', url: `${base}/instances/${vm}/attach`, payload: { acceleratorId: a.id } });
  expect(r.statusCode, r.body).toBe(200);
  return view(a.id);
}

/** The agent starts again after the host came back; resolves with the conductor's comparison. */
async function rejoin(): Promise<NonNullable<ReturnType<Stack['conductor']['rejoins']['get']>>> {
  const before = s.conductor.rejoins.get(HOST);
  await s.restartAgent();
  const run = s.conductor.rejoins.get(HOST);
  expect(run).toBeDefined();
  expect(run).not.toBe(before);
  return run!;
}

const sysRoot = (name: string): string => join(mkdtempSync(join(tmpdir(), `cyborg-${name}-`)), 'sys');

describe('nvidia_gpu_driver: a host whose vGPU mdev a reboot lost', () => {
  it("gets the mdev of the instance's vGPU made again by the conductor, the instance left attached", async () => {
    const root = sysRoot('nvidia-reboot');
    const kernel = new SysfsKernel(root, NVIDIA_HOST);
    let gpu!: NvidiaGpuDriver;
    s = await startStack({
      api: true,
      drivers: (host) => [kernel.drives((gpu = new NvidiaGpuDriver({ host, sysfsRoot: root, vgpuTypes: { 'nvidia-699': ['0000:b1:00.0'] } })))],
    });
    const a16 = await attach(named('0000:b1:00.0'), vm1);
    const handle = a16.allocations[0]!.handleUuid;
    // The handle names the VF whose mdev type makes it (the A16's first VF).
    const parent = '0000:b1:00.4';
    expect(await gpu.mdevExists(parent, handle)).toBe(true);

    kernel.reboot();
    expect(await gpu.mdevExists(parent, handle)).toBe(false);
    const outcome = await rejoin();
    expect(outcome).toMatchObject({ restored: [handle], relaidOut: [], flagged: [] });
    expect(await gpu.mdevExists(parent, handle)).toBe(true);

    expect(view(a16.id)).toMatchObject({
      state: 'attached',
      health: { status: 'ok' },
      missing: false,
      allocations: [{ instanceUuid: vm1, handleUuid: handle }],
    });
    const history = await s.conductor.history(a16.id);
    expect(history.find((r) => r.event === 'RESTORE')).toMatchObject({ actor: 'conductor', args: { handleUuid: handle, instanceUuid: vm1 } });
  });
});

describe('nvidia_gpu_driver: a host whose vGPU-typed VF a reboot reset (vGPU 17+ on SR-IOV)', () => {
  it("gets the VF's vGPU type written again by the conductor, the instance left attached", async () => {
    const root = sysRoot('nvidia-vf-reboot');
    const kernel = new SysfsKernel(root, NVIDIA_HOST);
    s = await startStack({
      api: true,
      drivers: (host) => [kernel.drives(new NvidiaGpuDriver({ host, sysfsRoot: root, vgpuTypes: { 'nvidia-590': ['0000:17:00.0'] } }))],
    });
    const a10 = await attach(named('0000:17:00.0'), vm1);
    const handle = a10.allocations[0]!.handleUuid;
    // The A10's first VF carries the vGPU type while the instance holds it.
    const current = join(root, 'bus/pci/devices/0000:17:00.4/nvidia/current_vgpu_type');
    expect(readFileSync(current, 'utf8').trim()).toBe('590');

    kernel.reboot();
    expect(readFileSync(current, 'utf8').trim()).toBe('0');
    const outcome = await rejoin();
    expect(outcome).toMatchObject({ restored: [handle], relaidOut: [], flagged: [] });
    expect(readFileSync(current, 'utf8').trim()).toBe('590');
    expect(view(a10.id)).toMatchObject({ state: 'attached', health: { status: 'ok' }, allocations: [{ instanceUuid: vm1, handleUuid: handle }] });
  });
});

describe('intel_nic_driver: a host whose SR-IOV VFs a reboot lost', () => {
  it("gets the X710's recorded VF count set again, the instance's VF back and bound, the instance left attached", async () => {
    const root = sysRoot('nic-reboot');
    const kernel = new SysfsKernel(root, NIC_HOST);
    let nic!: IntelNicDriver;
    s = await startStack({
      api: true,
      drivers: (host) => [kernel.drives((nic = new IntelNicDriver({ host, sysfsRoot: root, physicalDeviceMappings: ['physnet1:ens1f0'] })))],
    });
    const vf = await attach(named('0000:3b:02.1'), vm1);
    const handle = vf.allocations[0]!.handleUuid;
    const numvfs = join(root, 'bus/pci/devices/0000:3b:00.0/sriov_numvfs');

    // The host boots with SR-IOV off on the X710 (nothing told the kernel its 4 VFs again).
    kernel.reboot(['0000:3b:00.0']);
    expect(readFileSync(numvfs, 'utf8').trim()).toBe('0');
    const outcome = await rejoin();
    expect(outcome).toMatchObject({ relaidOut: ['0000:3b:00.0'], restored: [handle], flagged: [] });
    expect(readFileSync(numvfs, 'utf8').trim()).toBe('4');

    expect(view(vf.id)).toMatchObject({
      state: 'attached',
      health: { status: 'ok' },
      missing: false,
      allocations: [{ instanceUuid: vm1, handleUuid: handle }],
    });
    const others = s.conductor.listAccelerators({}).filter((a) => a.name.startsWith(`${HOST}_0000:3b:02.`));
    expect(others.map((a) => [a.name, a.missing])).toEqual(['0', '1', '2', '3'].map((f) => [`${HOST}_0000:3b:02.${f}`, false]));
    const setAgain = (await s.conductor.history(HOST)).find((r) => r.event === 'SET_VF_COUNT');
    expect(setAgain).toMatchObject({ actor: 'conductor', args: { address: '0000:3b:00.0', count: 4 } });
    expect((await s.conductor.history(vf.id)).find((r) => r.event === 'RESTORE')).toMatchObject({
      actor: 'conductor',
      args: { handleUuid: handle, instanceUuid: vm1 },
    });
    // The restarted driver learned the binding back: it refuses a count that would take the VF away.
    await expect(nic.setVfCount('0000:3b:00.0', 2)).rejects.toMatchObject({ code: 'driver.in_use' });
  });
});

describe('intel_qat_driver: a host whose QAT VFs a reboot lost', () => {
  it("gets the C62x's two VFs enabled again, though Cyborg's QAT deployables carry no VF trait", async () => {
    const root = sysRoot('qat-reboot');
    const kernel = new SysfsKernel(root, NIC_HOST);
    s = await startStack({ api: true, drivers: (host) => [kernel.drives(new IntelQatDriver({ host, sysfsRoot: root }))] });
    const vf = await attach(named('0000:3d:01.1'), vm1);
    const handle = vf.allocations[0]!.handleUuid;

    kernel.reboot(['0000:3d:00.0']);
    const outcome = await rejoin();
    expect(outcome).toMatchObject({ relaidOut: ['0000:3d:00.0'], restored: [handle], flagged: [] });
    expect(readFileSync(join(root, 'bus/pci/devices/0000:3d:00.0/sriov_numvfs'), 'utf8').trim()).toBe('2');
    expect(view(vf.id)).toMatchObject({
      state: 'attached',
      health: { status: 'ok' },
      missing: false,
      allocations: [{ instanceUuid: vm1, handleUuid: handle }],
    });
  });
});

describe('nvidia_gpu_driver: an H100 whose MIG instances a reboot lost', () => {
  const fixtures = fileURLToPath(new URL('../fixtures/vendors/', import.meta.url));

  /** The H100 host, its nvidia-smi answering from a copy of the fixture that -dgi / -cgi change as the card would. */
  async function migHost(): Promise<{ smi: string; held: AcceleratorView }> {
    const root = sysRoot('mig-reboot');
    const kernel = new SysfsKernel(root, NVIDIA_HOST);
    const smi = join(mkdtempSync(join(tmpdir(), 'cyborg-smi-')), 'h100');
    cpSync(join(fixtures, 'nvidia-smi', 'h100'), smi, { recursive: true });
    // The card gives each profile the place (and the instance id) it has in the fixture.
    cpSync(join(smi, 'lgi.txt'), join(smi, 'slots.txt'));
    s = await startStack({
      api: true,
      // A host whose MIG instances serve processes on the host itself ([gpu_devices] mig_host_attach):
      // a VM could not use a GPU instance handed out as an mdev, and is refused one (docs/drivers.md).
      drivers: (host) => [
        kernel.drives(new NvidiaGpuDriver({ host, sysfsRoot: root, nvidiaSmi: ['sh', join(fixtures, 'bin', 'fake-nvidia-smi.sh'), smi], migHostAttach: true })),
      ],
    });
    const held = await attach(named('0000:1b:00.0_MIG_3g.40gb'), vm1);
    // The reboot: the GPU keeps MIG mode, but its GPU instances are gone (nvidia-smi lists none).
    kernel.reboot();
    writeFileSync(join(smi, 'lgi.txt'), '');
    return { smi, held };
  }

  it("gets the recorded layout applied again and the instance's GPU instance back, the instance left attached", async () => {
    const { smi, held } = await migHost();
    const handle = held.allocations[0]!.handleUuid;
    const outcome = await rejoin();
    expect(outcome).toMatchObject({ relaidOut: ['0000:1b:00.0'], restored: [handle], flagged: [] });
    expect(readFileSync(join(smi, 'calls.log'), 'utf8').trim().split('\n')).toEqual(['mig -i 0 -cgi 19,14,9 -C']);

    expect(view(held.id)).toMatchObject({
      state: 'attached',
      health: { status: 'ok' },
      missing: false,
      allocations: [{ instanceUuid: vm1, handleUuid: handle }],
    });
    expect(
      s.conductor
        .listAccelerators({})
        .filter((a) => a.name.includes('_MIG_'))
        .map((a) => [a.name, a.missing])
        .sort(),
    ).toEqual(['1g.10gb', '2g.20gb', '3g.40gb'].map((p) => [`${HOST}_0000:1b:00.0_MIG_${p}`, false]));
    const applied = (await s.conductor.history(HOST)).find((r) => r.event === 'APPLY_MIG_LAYOUT');
    expect(applied).toMatchObject({ actor: 'conductor', args: { address: '0000:1b:00.0', profiles: '1g.10gb,2g.20gb,3g.40gb' } });
  });

  it("flags the held MIG device with nvidia-smi's reason when the card refuses the layout, the instance left attached", async () => {
    const { smi, held } = await migHost();
    writeFileSync(join(smi, 'fail-cgi'), '');
    const outcome = await rejoin();
    expect(outcome).toMatchObject({ relaidOut: [], restored: [], flagged: [{ acceleratorId: held.id, handleUuid: held.allocations[0]!.handleUuid }] });
    expect(view(held.id)).toMatchObject({ state: 'attached', health: { status: 'quarantined', fatal: true }, allocations: [{ instanceUuid: vm1 }] });
    expect(view(held.id).health?.reason).toMatch(/lost its MIG layout after the host re-joined and it could not be applied again: .*Insufficient Resources/);
  });
});
