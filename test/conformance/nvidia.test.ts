import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { NvidiaGpuDriver } from '../../drivers/nvidia/index.js';
import type { DeviceT } from '../../model/index.js';
import { GPU_HOST } from '../fixtures/sysfs/build.js';
import { buildHost, NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { lspciOf } from './lspci.js';

/**
 * Differential conformance: OpenStack Cyborg's own NVIDIA driver code
 * (`cyborg/accelerator/drivers/gpu/nvidia/sysinfo.py` and what it imports, at a pinned tag) and
 * ours, run on the same sysfs trees and lspci output, compared device by device: deployable name
 * (so the provider's uuid3), resource class and count, traits, attach handles, control path and
 * board info. Cyborg's code is read at test time from a clone named by CYBORG_SOURCE (nothing of
 * it is committed here; Debian packages no python3-cyborg) and run by the system's python3 with
 * the small oslo stand-ins of ./standins. Every difference is fixed or listed in DELIBERATE,
 * with why (docs/drivers.md says the same).
 */
const SOURCE = process.env.CYBORG_SOURCE;
const TAG = process.env.CYBORG_TAG ?? '16.0.1';
const HERE = dirname(fileURLToPath(import.meta.url));
const FILES = [
  'cyborg/accelerator/drivers/gpu/nvidia/sysinfo.py', 'cyborg/accelerator/drivers/gpu/utils.py',
  'cyborg/accelerator/common/utils.py', 'cyborg/common/constants.py',
];

const python = spawnSync('python3', ['--version']).status === 0;
const gitDir = SOURCE ? (existsSync(join(SOURCE, '.git')) ? join(SOURCE, '.git') : SOURCE) : undefined;
const why = !SOURCE
  ? 'no Cyborg source: set CYBORG_SOURCE to a clone of openstack/cyborg (Debian has no python3-cyborg; none is committed here)'
  : !python ? 'no python3 to run Cyborg\'s driver code' : undefined;

/** Differences kept on purpose, by case and deployable (or `*`), with why. */
const DELIBERATE: Record<string, string> = {
  'model': 'the model is nvidia-smi\'s product name or pci.ids\' (lspci\'s device text in Cyborg): both are the card\'s name, worded by different tools',
  'a16-sriov-vgpu:cyborg-error': 'Cyborg lists mdev_supported_types on the PF of an SR-IOV vGPU card (A16, A10: the types live on the VFs) and raises; we offer the vGPUs of its VFs',
};

interface Row { key: string; value: unknown }

/** The facts compared, deployable by deployable (model left out: see DELIBERATE). */
function facts(devices: Omit<DeviceT, 'uuid' | 'stub' | 'driver'>[]): Row[] {
  return devices.flatMap((d) => d.deployables.map((dep) => ({
    key: dep.name,
    value: {
      type: d.type, vendor: d.vendor, controlPath: d.controlPath.info, stdBoardInfo: JSON.parse(d.stdBoardInfo) as unknown, vendorBoardInfo: JSON.parse(d.vendorBoardInfo) as unknown,
      driverName: dep.driverName, numAccelerators: dep.numAccelerators,
      attributes: dep.attributes.map((a) => `${a.key}=${a.value}`),
      handles: dep.attachHandles.map((h) => `${h.attachType} ${h.attachInfo}`),
    },
  }))).sort((a, b) => a.key.localeCompare(b.key));
}

describe.skipIf(why !== undefined)(`conformance with OpenStack Cyborg ${TAG}'s nvidia_gpu_driver`, () => {
  let tree: string;
  beforeAll(() => {
    tree = mkdtempSync(join(tmpdir(), 'cyborg-conformance-'));
    cpSync(join(HERE, 'standins'), tree, { recursive: true });
    for (const f of FILES) {
      mkdirSync(dirname(join(tree, f)), { recursive: true });
      writeFileSync(join(tree, f), execFileSync('git', [`--git-dir=${gitDir}`, 'show', `${TAG}:${f}`]));
    }
  });

  async function cyborg(root: string, conf: object): Promise<{ ok: true; devices: DeviceT[] } | { ok: false; error: string }> {
    const lspci = join(mkdtempSync(join(tmpdir(), 'lspci-')), 'out');
    writeFileSync(lspci, await lspciOf(root));
    const out = execFileSync('python3', [join(HERE, 'run_cyborg.py'), 'cyborg.accelerator.drivers.gpu.nvidia.sysinfo', '_discover_gpus', '10de'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONPATH: tree, CONFORMANCE_SYSFS: root, CONFORMANCE_LSPCI: lspci, CONFORMANCE_CONF: JSON.stringify({ host: 'compute1', ...conf }) },
    });
    return JSON.parse(out.toString()) as { ok: true; devices: DeviceT[] } | { ok: false; error: string };
  }

  const cases: { name: string; spec: typeof NVIDIA_HOST; vgpu: Record<string, string[]>; filter: boolean }[] = [
    { name: 'h100-a10-a16-pgpu', spec: NVIDIA_HOST, vgpu: {}, filter: true },
    { name: 'h100-a10-a16-pgpu-with-vfs', spec: NVIDIA_HOST, vgpu: {}, filter: false },
    { name: 't4-mdev-vgpu', spec: GPU_HOST, vgpu: { 'nvidia-223': ['0000:3b:00.0'] }, filter: true },
  ];

  it.each(cases)('$name: every device the same', async ({ name, spec, vgpu, filter }) => {
    const root = buildHost(spec, `conformance-${name}`);
    const theirs = await cyborg(root, { gpu_devices: { enabled_vgpu_types: Object.keys(vgpu), filter_sriov_vfs: filter }, ...Object.fromEntries(Object.entries(vgpu).map(([t, a]) => [`vgpu_${t}`, { device_addresses: a }])) });
    if (!theirs.ok) throw new Error(`Cyborg's driver failed: ${theirs.error}`);
    const ours = await new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, vgpuTypes: vgpu, filterSriovVfs: filter }).discover();
    expect(facts(ours).length).toBeGreaterThan(0);
    expect(facts(ours)).toEqual(facts(theirs.devices));
    expect(DELIBERATE.model).toBeDefined();
  });

  it('an SR-IOV vGPU card: Cyborg raises, we offer its VFs\' vGPUs (deliberate)', async () => {
    const root = buildHost(NVIDIA_HOST, 'conformance-a16');
    const vgpu = { 'nvidia-699': ['0000:b1:00.0'] };
    const theirs = await cyborg(root, { gpu_devices: { enabled_vgpu_types: ['nvidia-699'], filter_sriov_vfs: true }, 'vgpu_nvidia-699': { device_addresses: vgpu['nvidia-699'] } });
    expect(theirs).toMatchObject({ ok: false, error: expect.stringMatching(/FileNotFoundError|InvalidVGPUType/) });
    expect(DELIBERATE['a16-sriov-vgpu:cyborg-error']).toBeDefined();
    const ours = await new NvidiaGpuDriver({ host: 'compute1', sysfsRoot: root, vgpuTypes: vgpu, filterSriovVfs: true }).discover();
    expect(ours.find((d) => d.deployables[0]!.name === 'compute1_0000:b1:00.0')!.deployables[0]!.attachHandles).toHaveLength(2);
  });
});

describe.skipIf(why === undefined)('conformance with OpenStack Cyborg\'s drivers', () => {
  it.skip(`skipped: ${why ?? ''}`, () => undefined);
});
