import { describe, expect, it } from 'vitest';
import { createDrivers } from '../../drivers/registry.js';
import { GPU_HOST } from '../fixtures/sysfs/build.js';
import { buildHost, FPGA_VENDOR_HOST, NIC_HOST, NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import type { DeployableT } from '../../model/index.js';
import { readGroups, whyNot, type Candidate } from '../../placement-query/index.js';

/**
 * Device profile groups as a cloud running OpenStack Cyborg writes them for Cyborg's own drivers
 * (names from Cyborg's driver sources, `../shared/reference/cyborg-internals.md` §4): each must
 * find a deployable of ours with that resource class and those traits, by string equality.
 */
const PROFILES: { driver: string; group: Record<string, string> }[] = [
  { driver: 'nvidia_gpu_driver', group: { 'resources:PGPU': '1', 'trait:OWNER_CYBORG': 'required', 'trait:CUSTOM_NVIDIA_1DB4': 'required' } },
  { driver: 'nvidia_gpu_driver', group: { 'resources:VGPU': '1', 'trait:CUSTOM_NVIDIA_1EB8_T4_2B': 'required' } },
  { driver: 'intel_fpga_driver', group: { 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required', 'trait:CUSTOM_FPGA_INTEL_PAC_ARRIA10': 'required' } },
  { driver: 'xilinx_fpga_driver', group: { 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_XILINX': 'required', 'trait:CUSTOM_FPGA_PRODUCT_ID_5004': 'required' } },
  { driver: 'intel_nic_driver', group: { 'resources:CUSTOM_NIC': '1', 'trait:CUSTOM_VF': 'required', 'trait:CUSTOM_PHYSNET1': 'required' } },
  { driver: 'intel_qat_driver', group: { 'resources:CUSTOM_QAT': '1' } },
];

/** The deployable as Placement sees its provider: its class with its size, its traits. */
function candidate(dep: DeployableT): Candidate {
  const rc = dep.attributes.find((a) => a.key === 'rc')?.value ?? '';
  return { id: dep.name, free: new Map([[rc, dep.numAccelerators]]), traits: dep.attributes.filter((a) => a.key.startsWith('trait')).map((a) => a.value) };
}

/** Through the one matcher every place that matches a profile uses (placement-query/). */
function matches(dep: DeployableT, group: Record<string, string>): boolean {
  return whyNot(readGroups([group])[0]!, candidate(dep)) === null;
}

describe("device profiles written for Cyborg's drivers", () => {
  it("match the providers of the drivers enabled under Cyborg's names", async () => {
    const gpuRoot = buildHost(GPU_HOST, 'profiles-gpu');
    const fpgaRoot = buildHost(FPGA_VENDOR_HOST, 'profiles-fpga');
    const nicRoot = buildHost(NIC_HOST, 'profiles-nic');
    const roots: Record<string, string> = {
      nvidia_gpu_driver: gpuRoot,
      intel_fpga_driver: fpgaRoot,
      xilinx_fpga_driver: fpgaRoot,
      intel_nic_driver: nicRoot,
      intel_qat_driver: nicRoot,
    };
    for (const { driver, group } of PROFILES) {
      const [d] = createDrivers([driver], {
        host: 'compute1',
        sysfsRoot: roots[driver],
        gpu: { vgpuTypes: { 'nvidia-223': ['0000:3b:00.0'] } },
        nic: { physicalDeviceMappings: ['physnet1:ens1f0'] },
      });
      const deps = (await d!.discover()).flatMap((x) => x.deployables);
      expect(
        deps.some((dep) => matches(dep, group)),
        `${driver}: ${JSON.stringify(group)}`,
      ).toBe(true);
    }
  });

  it("written for Cyborg ≤ 10.0.0, for today's Cyborg and for 2025.1's pci_driver, match the same GPUs with the migration options on", async () => {
    const root = buildHost(NVIDIA_HOST, 'profiles-migration');
    const [nvidia, pci] = createDrivers(['nvidia_gpu_driver', 'pci_driver'], {
      host: 'compute1',
      sysfsRoot: root,
      gpu: { filterSriovVfs: true, legacyTraits: true },
      // pci_driver reads Nova's whitelist, as Cyborg's: here the H100s, which nvidia_gpu_driver reports too.
      generic: { allowList: '{"vendor_id": "10de", "product_id": "2331"}' },
    });
    const nvidiaDeps = (await nvidia!.discover()).flatMap((x) => x.deployables);
    const pciDeps = (await pci!.discover()).flatMap((x) => x.deployables);
    const taking = (deps: DeployableT[], group: Record<string, string>): string[] => deps.filter((d) => matches(d, group)).map((d) => d.name);
    const h100s = ['compute1_0000:1b:00.0', 'compute1_0000:43:00.0'];
    expect(taking(nvidiaDeps, { 'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_2331': 'required' })).toEqual(h100s);
    expect(taking(nvidiaDeps, { 'resources:PGPU': '1', 'trait:CUSTOM_GPU_NVIDIA': 'required', 'trait:CUSTOM_GPU_PRODUCT_ID_2331': 'required' })).toEqual(h100s);
    expect(taking(pciDeps, { 'resources:CUSTOM_PCI': '1', 'trait:CUSTOM_PCI_NVIDIA': 'required', 'trait:CUSTOM_PCI_PRODUCT_ID_2331': 'required' })).toEqual(
      h100s,
    );
    // Both spellings on one provider; pci_driver's report is Cyborg's, field for field.
    expect(nvidiaDeps[1]!.attributes.map((a) => a.value)).toEqual([
      'PGPU',
      'OWNER_CYBORG',
      'CUSTOM_NVIDIA_2331',
      'CUSTOM_GPU_NVIDIA',
      'CUSTOM_GPU_PRODUCT_ID_2331',
    ]);
    const [dev] = await pci!.discover();
    expect(dev).toMatchObject({
      type: 'GPU',
      vendor: '10de',
      model: '2331',
      stdBoardInfo: '{"product_id": "2331", "controller": null}',
      vendorBoardInfo: 'miss_vb_info',
    });
    expect(dev!.deployables[0]).toMatchObject({ name: 'compute1_0000:1b:00.0', driverName: 'NVIDIA', numAccelerators: 1 });
    expect(dev!.deployables[0]!.attributes).toEqual([
      { key: 'rc', value: 'CUSTOM_PCI' },
      { key: 'trait0', value: 'OWNER_CYBORG' },
      { key: 'trait1', value: 'CUSTOM_PCI_NVIDIA' },
      { key: 'trait2', value: 'CUSTOM_PCI_PRODUCT_ID_2331' },
    ]);
  });

  it('refuses a driver name Cyborg does not have', () => {
    expect(() => createDrivers(['nvidia_driver'], { host: 'h' })).toThrow(
      'unknown driver nvidia_driver (known: fake_driver, generic, generic_driver, nvidia_gpu_driver',
    );
    expect(createDrivers(['generic_driver', 'generic', 'fake_driver'], { host: 'h', sysfsRoot: '/nonexistent' }).map((d) => d.name)).toEqual([
      'generic',
      'fake',
    ]);
  });
});
