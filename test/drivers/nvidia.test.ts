import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { NvidiaGpuDriver, parseLgi, parseLgip, parseQueryXml } from '../../drivers/nvidia/index.js';
import { buildHost, NVIDIA_HOST, NVIDIA_MIG_MIXED_HOST } from '../fixtures/vendors/hosts.js';
import type { DeployableT, DeviceT } from '../../model/index.js';
import { migVgpuSuffix } from '../../drivers/nvidia/mig-vgpu.js';
import { SysfsKernel } from '../support/sysfs-kernel.js';

const fixtures = fileURLToPath(new URL('../fixtures/vendors/', import.meta.url));
const FAKE_SMI = join(fixtures, 'bin', 'fake-nvidia-smi.sh');

/** A private copy of the H100 nvidia-smi outputs: the fake records its calls beside them. */
function smiDir(): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'cyborg-smi-')), 'h100');
  cpSync(join(fixtures, 'nvidia-smi', 'h100'), dir, { recursive: true });
  return dir;
}

const attrs = (d: DeployableT): Record<string, string> => Object.fromEntries(d.attributes.map((a) => [a.key, a.value]));
const dep = (devices: DeviceT[], name: string): DeployableT => {
  const d = devices.flatMap((x) => x.deployables).find((x) => x.name === name);
  if (!d)
    throw new Error(
      `no deployable ${name} in ${devices
        .flatMap((x) => x.deployables)
        .map((x) => x.name)
        .join(', ')}`,
    );
  return d;
};

describe('nvidia_gpu_driver on an H100 / A10 / A16 host', () => {
  let root: string;
  beforeAll(() => {
    root = buildHost(NVIDIA_HOST, 'nvidia');
  });

  it('reports every NVIDIA GPU as a pGPU the way Cyborg names it, never the console VGA', async () => {
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, filterSriovVfs: true });
    const devices = await driver.discover();
    expect(devices.map((d) => d.controlPath.info)).toEqual([
      '{"bus": "17", "device": "00", "domain": "0000", "function": "0"}',
      '{"bus": "1b", "device": "00", "domain": "0000", "function": "0"}',
      '{"bus": "43", "device": "00", "domain": "0000", "function": "0"}',
      '{"bus": "b1", "device": "00", "domain": "0000", "function": "0"}',
    ]);
    const h100 = dep(devices, 'compute1_0000:43:00.0');
    expect(attrs(h100)).toEqual({ rc: 'PGPU', trait0: 'OWNER_CYBORG', trait1: 'CUSTOM_NVIDIA_2331' });
    expect(h100.driverName).toBe('NVIDIA');
    expect(h100.attachHandles.map((h) => [h.attachType, h.attachInfo])).toEqual([['PCI', '{"bus": "43", "device": "00", "domain": "0000", "function": "0"}']]);
    expect(devices[1]!.stdBoardInfo).toBe('{"product_id": "2331", "controller": "3D controller"}');
  });

  it('offers vGPUs on the VFs of SR-IOV cards, several types per host', async () => {
    const driver = new NvidiaGpuDriver({
      host: 'compute1',
      sysfsRoot: root,
      vgpuTypes: { 'nvidia-590': ['0000:17:00.0'], 'nvidia-699': ['0000:b1:00.0'] },
    });
    const devices = await driver.discover();
    const a10 = dep(devices, 'compute1_0000:17:00.0');
    expect(attrs(a10)).toEqual({ rc: 'VGPU', trait0: 'OWNER_CYBORG', trait1: 'CUSTOM_NVIDIA_2236_A10_4Q' });
    // VF 5 is an A10-4Q already (bound before), VFs 4 and 6 can become one.
    expect(a10.attachHandles.map((h) => h.attachInfo)).toEqual(
      ['0000:17:00.4', '0000:17:00.5', '0000:17:00.6'].map((a) => `{"bus": "17", "device": "00", "domain": "0000", "function": "${a.at(-1)}"}`),
    );
    const a16 = dep(devices, 'compute1_0000:b1:00.0');
    expect(attrs(a16)).toEqual({ rc: 'VGPU', trait0: 'OWNER_CYBORG', trait1: 'CUSTOM_NVIDIA_25B6_A16_2Q' });
    expect(a16.attachHandles.map((h) => [h.attachType, h.attachInfo])).toEqual([
      ['MDEV', '{"asked_type": "nvidia-699", "bus": "b1", "device": "00", "domain": "0000", "function": "4", "vgpu_mark": "nvidia-699_0"}'],
      ['MDEV', '{"asked_type": "nvidia-699", "bus": "b1", "device": "00", "domain": "0000", "function": "5", "vgpu_mark": "nvidia-699_0"}'],
    ]);
    // The VFs of a vGPU card are not reported again as pGPUs.
    expect(devices.flatMap((d) => d.deployables).map((d) => d.name)).not.toContain('compute1_0000:17:00.4');
  });

  it("offers no more vGPUs on a card's VFs than the type's max_instance, keeping the VF that holds one", async () => {
    const own = buildHost(NVIDIA_HOST, 'nvidia-max-instance');
    for (const fn of ['4', '5']) {
      const t = join(own, `bus/pci/devices/0000:b1:00.${fn}/mdev_supported_types/nvidia-699`);
      writeFileSync(join(t, 'description'), 'num_heads=4, frl_config=60, framebuffer=8192M, max_resolution=7680x4320, max_instance=1\n');
    }
    // VF 5 holds a vGPU already (its mdev exists): that is the one handle left.
    const held = '5b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e12';
    mkdirSync(join(own, `bus/pci/devices/0000:b1:00.5/mdev_supported_types/nvidia-699/devices/${held}`), { recursive: true });
    writeFileSync(join(own, 'bus/pci/devices/0000:b1:00.5/mdev_supported_types/nvidia-699/available_instances'), '0\n');
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: own, vgpuTypes: { 'nvidia-699': ['0000:b1:00.0'] } });
    const a16 = dep(await driver.discover(), 'compute1_0000:b1:00.0');
    expect(a16.attachHandles.map((h) => JSON.parse(h.attachInfo).function)).toEqual(['5']);
    expect(a16.numAccelerators).toBe(1);
  });

  it("gives an mdev it did not make (an OpenStack Cyborg agent's, before the host moved) its own uuid as handle; the handle's own uuid comes back once it is gone", async () => {
    const own = buildHost(NVIDIA_HOST, 'nvidia-foreign-mdev');
    const types = (fn: string): string => join(own, `bus/pci/devices/0000:b1:00.${fn}/mdev_supported_types/nvidia-699`);
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: own, vgpuTypes: { 'nvidia-699': ['0000:b1:00.0'] } });
    const before = dep(await driver.discover(), 'compute1_0000:b1:00.0').attachHandles.map((h) => h.uuid);
    // Cyborg's handle uuid, which is its mdev's and what the instance's guest names.
    const cyborgs = 'b7d0c1e2-3f4a-4b5c-8d6e-7f8091a2b3c4';
    // As the kernel lists an mdev: under its parent, and in its type's devices/.
    mkdirSync(join(own, 'bus/pci/devices/0000:b1:00.4', cyborgs), { recursive: true });
    mkdirSync(join(types('4'), 'devices', cyborgs), { recursive: true });
    writeFileSync(join(types('4'), 'available_instances'), '0\n');
    const a16 = dep(await driver.discover(), 'compute1_0000:b1:00.0');
    expect(a16.attachHandles.map((h) => [h.uuid, JSON.parse(h.attachInfo).function])).toEqual([
      [cyborgs, '4'],
      [before[1], '5'],
    ]);
    // Bound to it (the conductor adopting it for the guest): nothing is made, the mdev is there.
    await driver.prepareAttach({ key: 'k', deployable: a16, params: { handleUuid: cyborgs } });
    expect(readFileSync(join(types('4'), 'create'), 'utf8')).toBe('');
    rmSync(join(types('4'), 'devices', cyborgs), { recursive: true });
    rmSync(join(own, 'bus/pci/devices/0000:b1:00.4', cyborgs), { recursive: true });
    writeFileSync(join(types('4'), 'available_instances'), '1\n');
    expect(dep(await driver.discover(), 'compute1_0000:b1:00.0').attachHandles.map((h) => h.uuid)).toEqual(before);
  });

  it('creates the mdev on attach, removes it on detach, and re-creates it for a bound handle after a reboot', async () => {
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, vgpuTypes: { 'nvidia-699': ['0000:b1:00.0'] } });
    const a16 = dep(await driver.discover(), 'compute1_0000:b1:00.0');
    const handle = a16.attachHandles[0]!;
    const create = join(root, 'bus/pci/devices/0000:b1:00.4/mdev_supported_types/nvidia-699/create');
    await driver.prepareAttach({ key: 'k1', deployable: a16, params: { handleUuid: handle.uuid } });
    expect(readFileSync(create, 'utf8')).toBe(handle.uuid);
    // The kernel made the mdev; then the host reboots and it is gone again.
    writeFileSync(create, '');
    const after = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, vgpuTypes: { 'nvidia-699': ['0000:b1:00.0'] } });
    expect(await after.restoreBound([{ deployable: a16, handleUuid: handle.uuid }])).toEqual({ restored: [handle.uuid], present: [] });
    expect(readFileSync(create, 'utf8')).toBe(handle.uuid);
    await expect(after.releaseAttach({ key: 'k2', deployable: a16, params: { handleUuid: 'nope' } })).rejects.toMatchObject({ code: 'driver.failed' });
  });

  it('makes a VF a vGPU by writing its type id, and gives it back with 0', async () => {
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, vgpuTypes: { 'nvidia-590': ['0000:17:00.0'] } });
    const a10 = dep(await driver.discover(), 'compute1_0000:17:00.0');
    const current = join(root, 'bus/pci/devices/0000:17:00.4/nvidia/current_vgpu_type');
    await driver.prepareAttach({ key: 'k', deployable: a10, params: { handleUuid: a10.attachHandles[0]!.uuid } });
    expect(readFileSync(current, 'utf8')).toBe('590');
    await driver.releaseAttach({ key: 'k', deployable: a10, params: { handleUuid: a10.attachHandles[0]!.uuid } });
    expect(readFileSync(current, 'utf8')).toBe('0');
  });

  it('refuses a vGPU type the card does not offer, naming it, and only for that card', async () => {
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, vgpuTypes: { 'nvidia-999': ['0000:b1:00.0'], 'nvidia-590': ['0000:17:00.0'] } });
    await expect(driver.discover()).rejects.toMatchObject({ code: 'driver.failed', details: { reason: 'vgpu_type_unsupported' } });
    const { devices, unobserved } = await driver.discoverPartial();
    expect(devices.flatMap((d) => d.deployables).map((d) => d.name)).toEqual(['compute1_0000:17:00.0', 'compute1_0000:1b:00.0', 'compute1_0000:43:00.0']);
    expect(unobserved).toEqual([
      expect.objectContaining({ reason: 'GPU 0000:b1:00.0 offers no vGPU type nvidia-999 (see [vgpu_nvidia-999] device_addresses)' }),
    ]);
    expect(unobserved[0]!.partial).toBeUndefined();
  });

  it("hides a GPU that is the firmware's console display (boot_vga = 1): an instance must not take the host's screen", async () => {
    const console = NVIDIA_HOST.filter((f) => f.vendor !== '1a03').map((f) => (f.address === '0000:43:00.0' ? { ...f, cls: '030000', bootVga: true } : f));
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: buildHost(console, 'nvidia-boot-vga'), filterSriovVfs: true });
    expect((await driver.discover()).flatMap((d) => d.deployables).map((d) => d.name)).toEqual([
      'compute1_0000:17:00.0',
      'compute1_0000:1b:00.0',
      'compute1_0000:b1:00.0',
    ]);
  });

  it("names the model from pci.ids when nvidia-smi does not run, Cyborg's placeholder when nothing knows it", async () => {
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, filterSriovVfs: true, modelNames: new Map([['2331', 'GH100 [H100 PCIe]']]) });
    const models = (await driver.discover()).map((d) => [d.controlPath.info.slice(9, 11), d.model]);
    expect(models).toEqual([
      ['17', 'miss model info'],
      ['1b', 'GH100 [H100 PCIe]'],
      ['43', 'GH100 [H100 PCIe]'],
      ['b1', 'miss model info'],
    ]);
  });
});

describe('MIG on a host with an A100 40GB and an H100: profile ids are per GPU model', () => {
  it('gives each GPU its own profiles, resource classes and traits', async () => {
    const root = buildHost(NVIDIA_MIG_MIXED_HOST, 'nvidia-mig-mixed');
    const dir = join(mkdtempSync(join(tmpdir(), 'cyborg-smi-')), 'a100-h100');
    cpSync(join(fixtures, 'nvidia-smi', 'a100-h100'), dir, { recursive: true });
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, nvidiaSmi: ['sh', FAKE_SMI, dir] });
    const devices = await driver.discover();
    expect(devices.map((d) => d.model)).toEqual(['NVIDIA A100-PCIE-40GB', 'NVIDIA H100 PCIe']);
    // Profile id 9 is a 3g.20gb on the A100 and a 3g.40gb on the H100.
    expect(devices.flatMap((d) => d.deployables).map((d) => [d.name, attrs(d).rc, attrs(d).trait1])).toEqual([
      ['compute1_0000:1b:00.0_MIG_2g.10gb', 'CUSTOM_MIG_2G_10GB', 'CUSTOM_NVIDIA_20F1_MIG_2G_10GB'],
      ['compute1_0000:1b:00.0_MIG_3g.20gb', 'CUSTOM_MIG_3G_20GB', 'CUSTOM_NVIDIA_20F1_MIG_3G_20GB'],
      ['compute1_0000:43:00.0_MIG_1g.10gb', 'CUSTOM_MIG_1G_10GB', 'CUSTOM_NVIDIA_2331_MIG_1G_10GB'],
      ['compute1_0000:43:00.0_MIG_3g.40gb', 'CUSTOM_MIG_3G_40GB', 'CUSTOM_NVIDIA_2331_MIG_3G_40GB'],
    ]);
  });
});

describe("MIG slices for VMs: the profile's MIG-backed vGPU, made on a VF at bind and removed at unbind", () => {
  let root: string;
  let kernel: SysfsKernel;
  let driver: NvidiaGpuDriver;
  const vfDir = (vf: string): string => join(root, 'bus', 'pci', 'devices', vf);
  beforeEach(() => {
    root = join(mkdtempSync(join(tmpdir(), 'cyborg-mig-vgpu-')), 'sys');
    kernel = new SysfsKernel(root, NVIDIA_MIG_MIXED_HOST);
    const dir = join(mkdtempSync(join(tmpdir(), 'cyborg-smi-')), 'a100-h100');
    cpSync(join(fixtures, 'nvidia-smi', 'a100-h100'), dir, { recursive: true });
    driver = kernel.drives(new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, nvidiaSmi: ['sh', FAKE_SMI, dir] }));
  });
  const migDep = async (name: string): Promise<DeployableT> => dep(await driver.discover(), `compute1_${name}`);

  it("reports the A100's MIG profiles only, never its VFs as GPUs of their own", async () => {
    expect((await driver.discover()).flatMap((d) => d.deployables).map((d) => d.name)).toEqual(
      ['0000:1b:00.0_MIG_2g.10gb', '0000:1b:00.0_MIG_3g.20gb', '0000:43:00.0_MIG_1g.10gb', '0000:43:00.0_MIG_3g.40gb'].map((n) => `compute1_${n}`),
    );
  });

  it("binds a 3g.20gb as a GRID A100-3-20C mdev with the handle's uuid, which Nova puts in the guest; unbind removes it", async () => {
    const d = await migDep('0000:1b:00.0_MIG_3g.20gb');
    const handle = d.attachHandles[0]!;
    const out = await driver.prepareAttach({ key: 'k', deployable: d, params: { handleUuid: handle.uuid } });
    expect(out).toEqual({ handleUuid: handle.uuid, attachType: 'MDEV', attachInfo: handle.attachInfo });
    // Made from the MIG-backed type of the profile (nvidia-476), on the first free VF.
    expect(readdirSync(join(vfDir('0000:1b:00.4'), 'mdev_supported_types', 'nvidia-476', 'devices'))).toEqual([handle.uuid]);
    expect(await driver.mdevExists('0000:1b:00.0', handle.uuid)).toBe(true);
    // Bound twice (a retried bind, a restore): nothing made again.
    await driver.prepareAttach({ key: 'k2', deployable: d, params: { handleUuid: handle.uuid } });
    expect(readdirSync(vfDir('0000:1b:00.5')).filter((e) => e === handle.uuid)).toEqual([]);

    // The 2g.10gb goes to the next VF: a VF holds one vGPU.
    const small = await migDep('0000:1b:00.0_MIG_2g.10gb');
    await driver.prepareAttach({ key: 'k3', deployable: small, params: { handleUuid: small.attachHandles[0]!.uuid } });
    expect(readdirSync(join(vfDir('0000:1b:00.5'), 'mdev_supported_types', 'nvidia-475', 'devices'))).toEqual([small.attachHandles[0]!.uuid]);

    await driver.releaseAttach({ key: 'k4', deployable: d, params: { handleUuid: handle.uuid } });
    expect(await driver.mdevExists('0000:1b:00.0', handle.uuid)).toBe(false);
    expect(existsSync(join(vfDir('0000:1b:00.4'), handle.uuid))).toBe(false);
    expect(await driver.mdevExists('0000:1b:00.0', small.attachHandles[0]!.uuid)).toBe(true);
  });

  it('fails the bind with a reason when every instance of the type is taken, naming the type', async () => {
    for (const vf of [4, 5, 6]) writeFileSync(join(vfDir(`0000:1b:00.${vf}`), 'mdev_supported_types', 'nvidia-476', 'available_instances'), '0');
    const d = await migDep('0000:1b:00.0_MIG_3g.20gb');
    const err = await driver.prepareAttach({ key: 'k', deployable: d, params: { handleUuid: d.attachHandles[0]!.uuid } }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'driver.failed', details: { reason: 'mig_not_servable', profile: '3g.20gb', gpuInstanceId: '2' } });
    expect((err as Error).message).toMatch(/no VF can take another GRID A100-3-20C now/);
  });

  it('fails the bind with a reason on a GPU without VFs, and on VFs of the vendor VFIO layout (vGPU 17+)', async () => {
    const h100 = await migDep('0000:43:00.0_MIG_1g.10gb');
    await expect(driver.prepareAttach({ key: 'k', deployable: h100, params: { handleUuid: h100.attachHandles[0]!.uuid } })).rejects.toMatchObject({
      details: { reason: 'mig_not_servable', address: '0000:43:00.0' },
    });
    const d = await migDep('0000:1b:00.0_MIG_2g.10gb');
    for (const vf of [4, 5, 6]) {
      rmSync(join(vfDir(`0000:1b:00.${vf}`), 'mdev_supported_types'), { recursive: true });
      mkdirSync(join(vfDir(`0000:1b:00.${vf}`), 'nvidia'), { recursive: true });
      writeFileSync(join(vfDir(`0000:1b:00.${vf}`), 'nvidia', 'creatable_vgpu_types'), '475 : GRID A100-2-10C\n');
    }
    const err = await driver.prepareAttach({ key: 'k', deployable: d, params: { handleUuid: d.attachHandles[0]!.uuid } }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/the VFs carry no mdev types \(vGPU 17\+/);
  });

  it('after a reboot that lost the mdev, restoring the bound handle makes it again', async () => {
    const d = await migDep('0000:1b:00.0_MIG_3g.20gb');
    const handle = d.attachHandles[0]!;
    await driver.prepareAttach({ key: 'k', deployable: d, params: { handleUuid: handle.uuid } });
    kernel.reboot();
    expect(await driver.mdevExists('0000:1b:00.0', handle.uuid)).toBe(false);
    expect((await driver.observe(await driver.discover())).present).not.toContain(handle.uuid);
    expect(await driver.restoreBound([{ deployable: d, handleUuid: handle.uuid }])).toEqual({ restored: [handle.uuid], present: [] });
    expect(await driver.mdevExists('0000:1b:00.0', handle.uuid)).toBe(true);
    expect((await driver.observe(await driver.discover())).present).toContain(handle.uuid);
  });
});

describe('MIG on the H100', () => {
  let root: string;
  beforeAll(() => {
    root = buildHost(NVIDIA_HOST, 'nvidia-mig');
  });

  it('reads nvidia-smi -q -x, mig -lgip and mig -lgi', () => {
    const dir = join(fixtures, 'nvidia-smi', 'h100');
    const gpus = parseQueryXml(readFileSync(join(dir, 'query.xml'), 'utf8'));
    expect(gpus.map((g) => [g.index, g.address, g.migCurrent, g.migDevices.length])).toEqual([
      [0, '0000:1b:00.0', 'Enabled', 3],
      [1, '0000:43:00.0', 'Disabled', 0],
    ]);
    expect(parseLgip(readFileSync(join(dir, 'lgip.txt'), 'utf8')).map((p) => `${p.name}:${p.id}:${p.total}`)).toEqual([
      '1g.10gb:19:7',
      '1g.10gb+me:20:1',
      '1g.20gb:15:4',
      '2g.20gb:14:3',
      '3g.40gb:9:2',
      '4g.40gb:5:1',
      '7g.80gb:0:1',
    ]);
    expect(parseLgi(readFileSync(join(dir, 'lgi.txt'), 'utf8')).map((i) => [i.name, i.instanceId])).toEqual([
      ['3g.40gb', 2],
      ['2g.20gb', 3],
      ['1g.10gb', 9],
    ]);
  });

  it('reports each MIG profile as its own resource class and trait; the GPU without MIG stays a pGPU', async () => {
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, nvidiaSmi: ['sh', FAKE_SMI, smiDir()] });
    const devices = await driver.discover();
    const mig = devices.find((d) => d.controlPath.info.includes('"1b"'))!;
    expect(mig.model).toBe('NVIDIA H100 PCIe');
    expect(mig.deployables.map((d) => [d.name, attrs(d).rc, attrs(d).trait1, d.numAccelerators])).toEqual([
      ['compute1_0000:1b:00.0_MIG_1g.10gb', 'CUSTOM_MIG_1G_10GB', 'CUSTOM_NVIDIA_2331_MIG_1G_10GB', 1],
      ['compute1_0000:1b:00.0_MIG_2g.20gb', 'CUSTOM_MIG_2G_20GB', 'CUSTOM_NVIDIA_2331_MIG_2G_20GB', 1],
      ['compute1_0000:1b:00.0_MIG_3g.40gb', 'CUSTOM_MIG_3G_40GB', 'CUSTOM_NVIDIA_2331_MIG_3G_40GB', 1],
    ]);
    expect(mig.deployables[2]!.attachHandles[0]!.attachInfo).toBe(
      '{"asked_type": "MIG-3g.40gb", "bus": "1b", "device": "00", "domain": "0000", "function": "0", "gpu_instance_id": "2", "vgpu_mark": "MIG-3g.40gb_2"}',
    );
    expect(attrs(dep(devices, 'compute1_0000:43:00.0')).rc).toBe('PGPU');
    // Each GPU is named by what it says about itself: nvidia-smi's GPU UUID (issue 39, identity).
    expect(devices.filter((d) => d.identity).map((d) => [d.controlPath.info.slice(8, 12), d.identity])).toEqual([
      ['"1b"', { serial: 'GPU-5f2b9a54-8c61-3e1d-0c4b-7d9e1a2b3c4d', source: 'nvidia-smi uuid' }],
      ['"43"', { serial: 'GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d', source: 'nvidia-smi uuid' }],
    ]);
  });

  it('applies an operator layout, remembers it, and re-applies it after a reboot', async () => {
    const dir = smiDir();
    const stateDir = mkdtempSync(join(tmpdir(), 'cyborg-state-'));
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, nvidiaSmi: ['sh', FAKE_SMI, dir], stateDir });
    await driver.applyMigLayout('0000:1b:00.0', ['1g.20gb', '1g.20gb', '1g.20gb', '1g.20gb']);
    expect(readFileSync(join(dir, 'calls.log'), 'utf8').trim().split('\n')).toEqual(['mig -i 0 -dci', 'mig -i 0 -dgi', 'mig -i 0 -cgi 15,15,15,15 -C']);
    // After the reboot, nvidia-smi still lists the old instances (the fake does not change): re-applied.
    const rebooted = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, nvidiaSmi: ['sh', FAKE_SMI, dir], stateDir });
    const [again] = await rebooted.reapplyMigLayouts();
    expect(again).toMatchObject({ address: '0000:1b:00.0', applied: true });
    expect(readFileSync(join(dir, 'calls.log'), 'utf8')).toContain('mig -i 0 -cgi 15,15,15,15 -C\nmig -i 0 -dci');
  });

  it('refuses a layout the card cannot take before touching it', async () => {
    const dir = smiDir();
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, nvidiaSmi: ['sh', FAKE_SMI, dir] });
    await expect(driver.applyMigLayout('0000:1b:00.0', ['3g.40gb', '3g.40gb', '1g.10gb'])).rejects.toMatchObject({
      code: 'driver.failed',
      details: { reason: 'layout_unsupported' },
    });
    await expect(driver.applyMigLayout('0000:1b:00.0', ['7g.80gb', '7g.80gb'])).rejects.toThrow('the card takes at most 1');
    await expect(driver.applyMigLayout('0000:1b:00.0', ['5g.50gb'])).rejects.toThrow('no profile 5g.50gb');
    await expect(driver.applyMigLayout('0000:43:00.0', ['7g.80gb'])).rejects.toMatchObject({ details: { reason: 'mig_disabled' } });
    expect(existsSync(join(dir, 'calls.log'))).toBe(false);
  });

  it('restores the previous layout when nvidia-smi rejects the new one', async () => {
    const dir = smiDir();
    writeFileSync(join(dir, 'fail-cgi'), '');
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, nvidiaSmi: ['sh', FAKE_SMI, dir] });
    const err = await driver.applyMigLayout('0000:1b:00.0', ['4g.40gb', '3g.40gb']).catch((e: unknown) => e);
    // The fake fails every -cgi, so the restore fails too: the error names both reasons.
    expect(err).toMatchObject({ code: 'driver.failed', details: { reason: 'layout_rejected', restored: false } });
    expect((err as Error).message).toMatch(/Insufficient Resources.*restoring the previous layout failed too/);
  });

  it('refuses to change the layout while an instance is attached', async () => {
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, nvidiaSmi: ['sh', FAKE_SMI, smiDir()], migHostAttach: true });
    const d = (await driver.discover()).flatMap((x) => x.deployables).find((x) => x.name.endsWith('MIG_1g.10gb'))!;
    await driver.prepareAttach({ key: 'k', deployable: d, params: { handleUuid: d.attachHandles[0]!.uuid } });
    await expect(driver.applyMigLayout('0000:1b:00.0', ['7g.80gb'])).rejects.toMatchObject({ code: 'driver.in_use' });
    await driver.releaseAttach({ key: 'k', deployable: d, params: { handleUuid: d.attachHandles[0]!.uuid } });
  });

  it('reads an N/A product name as no name: the model falls back to pci.ids', async () => {
    const dir = smiDir();
    writeFileSync(
      join(dir, 'query.xml'),
      readFileSync(join(dir, 'query.xml'), 'utf8').replaceAll('<product_name>NVIDIA H100 PCIe</product_name>', '<product_name>N/A</product_name>'),
    );
    const driver = new NvidiaGpuDriver({
      host: 'compute1',
      sysfsRoot: root,
      nvidiaSmi: ['sh', FAKE_SMI, dir],
      filterSriovVfs: true,
      modelNames: new Map([['2331', 'GH100 [H100 PCIe]']]),
    });
    expect((await driver.discover()).filter((d) => d.stdBoardInfo.includes('2331')).map((d) => d.model)).toEqual(['GH100 [H100 PCIe]', 'GH100 [H100 PCIe]']);
  });

  it('never hands a VM a GPU instance it cannot make a vGPU on: without VFs the bind fails with a reason, nothing is made', async () => {
    const driver = new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, nvidiaSmi: ['sh', FAKE_SMI, smiDir()] });
    const d = (await driver.discover()).flatMap((x) => x.deployables).find((x) => x.name.endsWith('MIG_3g.40gb'))!;
    const err = await driver
      .prepareAttach({ key: 'k', deployable: d, params: { handleUuid: d.attachHandles[0]!.uuid, arqUuid: 'a1' } })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'driver.failed', details: { reason: 'mig_not_servable', gpuInstanceId: '2', profile: '3g.40gb' } });
    expect((err as Error).message).toMatch(/GPU 0000:1b:00.0, MIG 3g.40gb \(GPU instance 2\): the GPU has no SR-IOV VFs/);
  });

  it('reports the GPUs from sysfs when nvidia-smi fails, naming as not observed those that may be in MIG mode', async () => {
    const mismatch = [
      'sh',
      '-c',
      'echo "Failed to initialize NVML: Driver/library version mismatch"; echo "NVML library version: 550.127"; exit 18',
      'nvidia-smi',
    ];
    const driver = new NvidiaGpuDriver({
      host: 'compute1',
      sysfsRoot: root,
      nvidiaSmi: mismatch,
      vgpuTypes: { 'nvidia-699': ['0000:b1:00.0'] },
      filterSriovVfs: true,
    });
    const { devices, unobserved } = await driver.discoverPartial();
    // A vGPU card is all in sysfs; the others cannot be told from a MIG GPU without nvidia-smi.
    expect(devices.flatMap((d) => d.deployables).map((d) => d.name)).toEqual(['compute1_0000:b1:00.0']);
    expect(unobserved.map((u) => u.partial?.deployables.map((d) => d.name)[0])).toEqual([
      'compute1_0000:17:00.0',
      'compute1_0000:1b:00.0',
      'compute1_0000:43:00.0',
    ]);
    for (const u of unobserved)
      expect(u.reason).toBe('nvidia-smi -q -x: exited with 18: Failed to initialize NVML: Driver/library version mismatch / NVML library version: 550.127');
  });

  it('after nvidia-smi said which GPUs are out of MIG mode, only the MIG one waits for it', async () => {
    const dir = smiDir();
    const driver = new NvidiaGpuDriver({
      host: 'compute1',
      sysfsRoot: root,
      nvidiaSmi: ['sh', join(fixtures, 'bin', 'failing-nvidia-smi.sh'), dir],
      filterSriovVfs: true,
    });
    await driver.discoverPartial();
    for (const mode of ['exit', 'truncated']) {
      writeFileSync(join(dir, 'failure'), mode);
      const { devices, unobserved } = await driver.discoverPartial();
      expect(unobserved.map((u) => u.partial?.deployables[0]?.name)).toEqual(['compute1_0000:1b:00.0']);
      expect(devices.map((d) => d.deployables[0]!.name)).toEqual(['compute1_0000:17:00.0', 'compute1_0000:43:00.0', 'compute1_0000:b1:00.0']);
    }
  });

  it('ends a missing binary, malformed output and a hanging nvidia-smi in a DriverError', async () => {
    const missing = new NvidiaGpuDriver({ host: 'h', sysfsRoot: root, nvidiaSmi: ['/nonexistent/nvidia-smi'] });
    await expect(missing.discover()).rejects.toMatchObject({ name: 'DriverError', code: 'driver.failed', details: { reason: 'binary_missing' } });
    const empty = new NvidiaGpuDriver({ host: 'h', sysfsRoot: root, nvidiaSmi: ['true'] });
    await expect(empty.discover()).rejects.toMatchObject({ details: { reason: 'malformed_output' } });
    const garbage = new NvidiaGpuDriver({ host: 'h', sysfsRoot: root, nvidiaSmi: ['echo', '<nvidia_smi_log><gpu>'] });
    await expect(garbage.discover()).rejects.toMatchObject({ details: { reason: 'malformed_output' } });
    const hang = new NvidiaGpuDriver({ host: 'h', sysfsRoot: root, nvidiaSmi: ['sh', '-c', 'sleep 30', 'nvidia-smi'], commandTimeoutMs: 300 });
    await expect(hang.discover()).rejects.toMatchObject({ code: 'driver.timeout', details: { reason: 'timeout' } });
    const dir = smiDir();
    writeFileSync(join(dir, 'lgip.txt'), '| GPU instance profiles: |\n|====|\n|   0  MIG 1g.10gb  x  ?/7  9.75 |\n');
    const bad = new NvidiaGpuDriver({ host: 'h', sysfsRoot: root, nvidiaSmi: ['sh', FAKE_SMI, dir] });
    await expect(bad.discover()).rejects.toMatchObject({ details: { reason: 'malformed_output' } });
  });
});

describe('MIG-backed vGPU type names', () => {
  it('reads a profile as the suffix of its vGPU type: slices, memory, ME for +me; none for compute-instance profiles', () => {
    expect(['3g.20gb', '1g.5gb+me', 'MIG 7g.80gb', '1g.10gb', '1c.2g.10gb', '1g.24gb+gfx'].map(migVgpuSuffix)).toEqual([
      '3-20C',
      '1-5CME',
      '7-80C',
      '1-10C',
      undefined,
      undefined,
    ]);
  });
});
