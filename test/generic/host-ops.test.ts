import { chmod, cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GenericDriver } from '../../drivers/generic/index.js';
import type { DeployableT } from '../../model/index.js';

const fixture = fileURLToPath(new URL('../fixtures/sysfs/gpu-host', import.meta.url));

/** A private copy of the GPU host's tree: the driver writes into it as it would into /sys. */
let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'cyborg-sysfs-'));
  await cp(fixture, root, { recursive: true, verbatimSymlinks: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const dev = (address: string): string => join(root, 'bus', 'pci', 'devices', address);
const read = (path: string): Promise<string> => readFile(path, 'utf8');

async function deployableAt(d: GenericDriver, suffix: string): Promise<DeployableT> {
  const all = (await d.discover()).flatMap((x) => x.deployables);
  const dep = all.find((x) => x.name.endsWith(suffix));
  if (!dep) throw new Error(`no deployable ${suffix} in ${all.map((x) => x.name).join(', ')}`);
  return dep;
}

describe('generic driver host operations through sysfs', () => {
  it('enabling binds the card to vfio-pci the kernel way (driver_override, unbind, drivers_probe); disabling clears the override', async () => {
    const d = new GenericDriver({ host: 'h1', sysfsRoot: root });
    const t4 = await deployableAt(d, '0000_3b_00_0');
    await expect(d.install({ key: 'k1', deployable: t4, params: {} })).resolves.toEqual({ boundTo: 'vfio-pci', functions: ['0000:3b:00.0'] });
    expect(await read(join(dev('0000:3b:00.0'), 'driver_override'))).toBe('vfio-pci');
    expect(await read(join(root, 'bus/pci/drivers/nvidia/unbind'))).toBe('0000:3b:00.0');
    expect(await read(join(root, 'bus/pci/drivers_probe'))).toBe('0000:3b:00.0');

    await d.uninstall({ key: 'k2', deployable: t4, params: {} });
    expect(await read(join(dev('0000:3b:00.0'), 'driver_override'))).toBe('\n');
  });

  it('enabling a card already on vfio-pci writes nothing (idempotent)', async () => {
    const d = new GenericDriver({ host: 'h1', sysfsRoot: root });
    await d.install({ key: 'k1', deployable: await deployableAt(d, '0000_af_00_0'), params: {} });
    expect(await read(join(dev('0000:af:00.0'), 'driver_override'))).toBe('(null)\n');
    expect(await read(join(root, 'bus/pci/drivers_probe'))).toBe('');
  });

  it('attaching a vGPU creates its mdev with the attach handle uuid as the mdev uuid', async () => {
    const d = new GenericDriver({ host: 'h1', sysfsRoot: root, allowList: '{"product_id": "1eb8", "mdev_type": "nvidia-223"}' });
    const vgpu = await deployableAt(d, '0000_3b_00_0');
    const handle = vgpu.attachHandles[0]!;
    await d.prepareAttach({ key: 'a1', deployable: vgpu, params: { handleUuid: handle.uuid, instanceUuid: 'i1' } });
    expect(await read(join(dev('0000:3b:00.0'), 'mdev_supported_types/nvidia-223/create'))).toBe(handle.uuid);
    await expect(d.releaseAttach({ key: 'a2', deployable: vgpu, params: { handleUuid: handle.uuid } })).resolves.toEqual({ handleUuid: handle.uuid });
  });

  it('installs the driver only where vfio-pci is loaded, and says how to fix it otherwise', async () => {
    const d = new GenericDriver({ host: 'h1', sysfsRoot: root, version: '1.0.0' });
    await expect(d.installDriver({ key: 'i1', version: '1.1.0' })).resolves.toEqual({ version: '1.1.0' });
    await rm(join(root, 'bus/pci/drivers/vfio-pci'), { recursive: true });
    await expect(d.installDriver({ key: 'i2' })).rejects.toThrow(
      'vfio-pci is not loaded on this host: run "modprobe vfio-pci" or set CYBORG_GENERIC_INSTALL_COMMAND',
    );
  });

  it('programming needs a configured command, and runs it with the address and the image', async () => {
    const log = join(root, 'program.log');
    const bare = new GenericDriver({ host: 'h1', sysfsRoot: root });
    const dep = await deployableAt(bare, '0000_af_00_0');
    await expect(bare.program({ key: 'p1', deployable: dep, params: { bitstreamId: 'b1' } })).rejects.toThrow(/set CYBORG_GENERIC_PROGRAM_COMMAND/);
    const d = new GenericDriver({ host: 'h1', sysfsRoot: root, commands: { program: ['sh', '-c', `echo "$0 $1" > ${log}`, '{address}', '{image}'] } });
    await d.program({ key: 'p2', deployable: await deployableAt(d, '0000_af_00_0'), params: { bitstreamId: 'b1' } });
    expect(await read(log)).toBe('0000:af:00.0 b1\n');
  });
});

describe('generic driver host operations through a helper command', () => {
  it('hands each operation to the helper, and reports its failure with its stderr', async () => {
    const helper = join(root, 'helper.sh');
    const log = join(root, 'helper.log');
    await writeFile(helper, `#!/bin/sh\necho "$@" >> ${log}\nif [ "$1" = release ]; then echo "device busy" >&2; exit 3; fi\n`);
    await chmod(helper, 0o755);
    const d = new GenericDriver({ host: 'h1', sysfsRoot: root, hostOps: 'command', helper: [helper] });
    const dep = await deployableAt(d, '0000_3b_00_0');
    await d.install({ key: 'k1', deployable: dep, params: {} });
    await d.updateDriver({ key: 'u1', version: '2.0.0' });
    await expect(d.uninstall({ key: 'k2', deployable: dep, params: {} })).rejects.toThrow('helper.sh release failed: device busy');
    expect(await read(log)).toBe('bind 0000:3b:00.0 vfio-pci\ndriver-update 2.0.0\nrelease 0000:3b:00.0\n');
    expect(d.version).toBe('2.0.0');
  });
});
