import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GenericDriver } from '../../drivers/generic/index.js';
import { cpid, deployable, device, mdevHandle, pciHandle } from './expect.js';

const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/sysfs/${name}`, import.meta.url));
const driver = (host: string, tree: string, allowList = ''): GenericDriver =>
  new GenericDriver({ host, sysfsRoot: fixture(tree), allowList, hostOps: 'simulate' });

describe('generic driver discovery on a GPU host', () => {
  const host = 'gpu-host-1';

  it('reports the T4 and the V100 whole, the Flex 170 per VF, and skips the console VGA and the management NIC', async () => {
    const devices = await driver(host, 'gpu-host').discover();
    expect(devices).toEqual([
      device(
        host,
        {
          bdf: '0000:3b:00.0',
          type: 'GPU',
          vendor: '10de',
          product: '1eb8',
          model: 'Tesla T4',
          cls: '030200',
          driver: 'nvidia',
          iommu: '30',
          numa: '0',
          sub: ['10de', '12a2'],
          sriov: [0, 0],
        },
        [deployable(host, '0000:3b:00.0', 'PGPU', ['OWNER_CYBORG', 'CUSTOM_GPU_NVIDIA', 'CUSTOM_GPU_PRODUCT_ID_1EB8'], [pciHandle(host, '0000:3b:00.0')])],
      ),
      device(
        host,
        {
          bdf: '0000:86:00.0',
          type: 'GPU',
          vendor: '8086',
          product: '56c0',
          model: 'Data Center GPU Flex 170',
          cls: '038000',
          driver: 'i915',
          iommu: '80',
          numa: '1',
          sub: ['8086', '4905'],
          sriov: [31, 2],
        },
        [
          deployable(
            host,
            '0000:86:00.1',
            'VGPU',
            ['OWNER_CYBORG', 'CUSTOM_GPU_INTEL', 'CUSTOM_GPU_PRODUCT_ID_56C0', 'CUSTOM_VF'],
            [pciHandle(host, '0000:86:00.1')],
          ),
          deployable(
            host,
            '0000:86:00.2',
            'VGPU',
            ['OWNER_CYBORG', 'CUSTOM_GPU_INTEL', 'CUSTOM_GPU_PRODUCT_ID_56C0', 'CUSTOM_VF'],
            [pciHandle(host, '0000:86:00.2')],
          ),
        ],
      ),
      device(
        host,
        {
          bdf: '0000:af:00.0',
          type: 'GPU',
          vendor: '10de',
          product: '1db4',
          model: 'Tesla V100 PCIe 16GB',
          cls: '030200',
          driver: 'vfio-pci',
          iommu: '120',
          numa: '1',
          sub: ['10de', '1214'],
          sriov: [0, 0],
        },
        [deployable(host, '0000:af:00.0', 'PGPU', ['OWNER_CYBORG', 'CUSTOM_GPU_NVIDIA', 'CUSTOM_GPU_PRODUCT_ID_1DB4'], [pciHandle(host, '0000:af:00.0')])],
      ),
    ]);
  });

  it('offers the T4 as vGPUs when the allow-list asks for an mdev type, with Nova-style extra traits', async () => {
    const allow = JSON.stringify([{ vendor_id: '10de', product_id: '1eb8', mdev_type: 'nvidia-223', traits: 'gold,CUSTOM_GRID' }]);
    const devices = await driver(host, 'gpu-host', allow).discover();
    expect(devices).toHaveLength(1);
    const handles = Array.from({ length: 8 }, (_, i) => mdevHandle(host, '0000:3b:00.0', 'nvidia-223', i));
    expect(devices[0]!.deployables).toEqual([
      deployable(
        host,
        '0000:3b:00.0',
        'VGPU',
        ['OWNER_CYBORG', 'CUSTOM_GPU_NVIDIA', 'CUSTOM_GPU_PRODUCT_ID_1EB8', 'CUSTOM_GPU_MDEV_NVIDIA_223', 'CUSTOM_GOLD', 'CUSTOM_GRID'],
        handles,
      ),
    ]);
    expect(handles[0]!.attachInfo).toBe('{"asked_type": "nvidia-223", "vgpu_mark": "nvidia-223_0"}');
  });

  it('lists the services: mdev types with their capacity, each VF, whole-card passthrough', async () => {
    const services = await driver(host, 'gpu-host').services();
    expect(services.map((s) => [s.address, s.kind, s.name, s.available, s.total])).toEqual([
      ['0000:3b:00.0', 'mdev_type', 'nvidia-222', 16, 16],
      ['0000:3b:00.0', 'mdev_type', 'nvidia-223', 7, 8],
      ['0000:3b:00.0', 'mdev_type', 'nvidia-230', 16, 16],
      ['0000:86:00.0', 'vf', '0000:86:00.1', undefined, undefined],
      ['0000:86:00.0', 'vf', '0000:86:00.2', undefined, undefined],
      ['0000:af:00.0', 'passthrough', '0000:af:00.0', undefined, undefined],
    ]);
    expect(services[1]!.details).toEqual({
      parent: '0000:3b:00.0',
      name: 'GRID T4-2B',
      device_api: 'vfio-pci',
      description: 'num_heads=4, frl_config=45, framebuffer=2048M, max_resolution=5120x2880, max_instance=8',
    });
    expect(new Set(services.map((s) => s.id)).size).toBe(services.length);
  });

  it('keeps every id across restarts of the driver (ids come from host and PCI address)', async () => {
    const first = await driver(host, 'gpu-host').discover();
    const second = await driver(host, 'gpu-host').discover();
    expect(second).toEqual(first);
    const elsewhere = await driver('gpu-host-2', 'gpu-host').discover();
    expect(elsewhere[0]!.uuid).not.toBe(first[0]!.uuid);
  });
});

describe('generic driver discovery on an FPGA host', () => {
  const host = 'fpga-host-1';

  it('reports the U250 as one card with both PFs, the PAC by its VF, the Ascend as a processing accelerator; not the NVMe disk', async () => {
    const devices = await driver(host, 'fpga-host').discover();
    expect(devices).toEqual([
      device(
        host,
        {
          bdf: '0000:3b:00.0',
          type: 'FPGA',
          vendor: '10ee',
          product: '5004',
          model: 'Alveo U250 (management)',
          cls: '120000',
          driver: 'xclmgmt',
          iommu: '30',
          numa: '0',
          sub: ['10ee', '000e'],
          sriov: [0, 0],
        },
        [
          deployable(
            host,
            '0000:3b:00.0',
            'FPGA',
            ['OWNER_CYBORG', 'CUSTOM_FPGA_XILINX', 'CUSTOM_FPGA_PRODUCT_ID_5004'],
            [pciHandle(host, '0000:3b:00.0'), pciHandle(host, '0000:3b:00.1', '0000:3b:00.0')],
          ),
        ],
      ),
      device(
        host,
        {
          bdf: '0000:5e:00.0',
          type: 'FPGA',
          vendor: '8086',
          product: '09c4',
          model: 'PAC Arria 10 GX',
          cls: '120000',
          driver: 'dfl-pci',
          iommu: '40',
          numa: '0',
          sub: ['8086', '0000'],
          sriov: [1, 1],
        },
        [
          deployable(
            host,
            '0000:5e:00.1',
            'FPGA',
            ['OWNER_CYBORG', 'CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_PRODUCT_ID_09C5', 'CUSTOM_VF'],
            [pciHandle(host, '0000:5e:00.1')],
          ),
        ],
      ),
      device(
        host,
        {
          bdf: '0000:d8:00.0',
          type: 'AICHIP',
          vendor: '19e5',
          product: 'd100',
          model: 'Ascend 310',
          cls: '120000',
          driver: '',
          iommu: '100',
          numa: '1',
          sub: ['19e5', '0100'],
          sriov: [0, 0],
        },
        [
          deployable(
            host,
            '0000:d8:00.0',
            'CUSTOM_AICHIP',
            ['OWNER_CYBORG', 'CUSTOM_AICHIP_HUAWEI', 'CUSTOM_AICHIP_PRODUCT_ID_D100'],
            [pciHandle(host, '0000:d8:00.0')],
          ),
        ],
      ),
    ]);
  });

  it('reports the NVMe disk only when allow-listed, with the resource class the list names', async () => {
    const devices = await driver(host, 'fpga-host', '{"address": "0000:da:00.0", "resource_class": "nvme_disk"}').discover();
    expect(devices.map((d) => [d.type, d.controlPath.info, d.deployables[0]!.attributes[0]!.value])).toEqual([
      ['SSD', cpid('0000:da:00.0'), 'CUSTOM_NVME_DISK'],
    ]);
  });

  it('lists the programmed function as a service once the FPGA is programmed', async () => {
    const d = driver(host, 'fpga-host');
    const [, pac] = await d.discover();
    await d.program({ key: 'k1', deployable: pac!.deployables[0]!, params: { functionId: 'a9e4-crypto' } });
    const fn = (await d.services()).filter((s) => s.kind === 'function');
    expect(fn.map((s) => [s.address, s.name, s.details])).toEqual([['0000:5e:00.0', 'a9e4-crypto', { bitstream_id: '', function_id: 'a9e4-crypto' }]]);
  });
});

describe('generic driver discovery on a NIC host', () => {
  const host = 'nic-host-1';
  const nicTraits = (vendor: string, pid: string): string[] => ['OWNER_CYBORG', `CUSTOM_NIC_${vendor}`, `CUSTOM_NIC_PRODUCT_ID_${pid}`, 'CUSTOM_VF'];

  it('reports one CUSTOM_NIC deployable per VF, QAT VFs as CUSTOM_QAT, and leaves NIC ports without VFs to the host', async () => {
    const devices = await driver(host, 'nic-host').discover();
    expect(devices).toEqual([
      device(
        host,
        {
          bdf: '0000:3b:00.0',
          type: 'NIC',
          vendor: '8086',
          product: '1572',
          model: 'Ethernet Controller X710 10GbE SFP+',
          cls: '020000',
          driver: 'i40e',
          iommu: '30',
          numa: '0',
          sub: ['8086', '0000'],
          sriov: [64, 4],
        },
        ['0000:3b:02.0', '0000:3b:02.1', '0000:3b:02.2', '0000:3b:02.3'].map((vf) =>
          deployable(host, vf, 'CUSTOM_NIC', nicTraits('INTEL', '154C'), [pciHandle(host, vf)]),
        ),
      ),
      device(
        host,
        {
          bdf: '0000:3d:00.0',
          type: 'QAT',
          vendor: '8086',
          product: '37c8',
          model: 'QuickAssist C62x',
          cls: '0b4000',
          driver: 'c6xx',
          iommu: '37',
          numa: '0',
          sub: ['8086', '0000'],
          sriov: [16, 2],
        },
        ['0000:3d:01.0', '0000:3d:01.1'].map((vf) =>
          deployable(host, vf, 'CUSTOM_QAT', ['OWNER_CYBORG', 'CUSTOM_QAT_INTEL', 'CUSTOM_QAT_PRODUCT_ID_37C9', 'CUSTOM_VF'], [pciHandle(host, vf)]),
        ),
      ),
      device(
        host,
        {
          bdf: '0000:af:00.0',
          type: 'NIC',
          vendor: '15b3',
          product: '1017',
          model: 'ConnectX-5',
          cls: '020000',
          driver: 'mlx5_core',
          iommu: '120',
          numa: '1',
          sub: ['15b3', '0007'],
          sriov: [8, 2],
        },
        ['0000:af:00.2', '0000:af:00.3'].map((vf) => deployable(host, vf, 'CUSTOM_NIC', nicTraits('MELLANOX', '1018'), [pciHandle(host, vf)])),
      ),
    ]);
  });

  it('with an allow-list reports only what it admits: a PF by its netdev name brings its VFs, a bare port is one CUSTOM_PF deployable', async () => {
    const allow = JSON.stringify([{ devname: 'ens2f0np0' }, { address: '0000:3b:00.1' }, { vendor_id: '8086', product_id: '154c', address: '*:3b:02.1' }]);
    const devices = await driver(host, 'nic-host', allow).discover();
    expect(devices.map((d) => [d.controlPath.info, d.deployables.map((x) => x.name)])).toEqual([
      [cpid('0000:3b:00.0'), ['nic-host-1_0000_3b_02_1']],
      [cpid('0000:3b:00.1'), ['nic-host-1_0000_3b_00_1']],
      [cpid('0000:af:00.0'), ['nic-host-1_0000_af_00_2', 'nic-host-1_0000_af_00_3']],
    ]);
    expect(devices[1]!.deployables[0]!.attributes.map((a) => a.value)).toEqual([
      'CUSTOM_NIC',
      'OWNER_CYBORG',
      'CUSTOM_NIC_INTEL',
      'CUSTOM_NIC_PRODUCT_ID_1572',
      'CUSTOM_PF',
    ]);
  });

  it('refuses an allow-list it cannot read, naming the fault', () => {
    expect(() => driver(host, 'nic-host', '{"vendor": "8086"}')).toThrow(/unknown key "vendor"/);
    expect(() => driver(host, 'nic-host', '[{"address": "0000:3b:zz.0"}]')).toThrow(/bad slot "zz"/);
    expect(() => driver(host, 'nic-host', '{oops')).toThrow(/not JSON/);
  });
});

describe('generic driver discovery on this machine', () => {
  it('runs over the real /sys without error', async () => {
    const d = new GenericDriver({ host: 'this-machine', sysfsRoot: '/sys', hostOps: 'simulate' });
    const devices = await d.discover();
    expect(Array.isArray(devices)).toBe(true);
    for (const dev of devices) expect(dev.deployables.length).toBeGreaterThan(0);
    await expect(d.services()).resolves.toBeInstanceOf(Array);
  });

  it('finds nothing, without error, where there is no PCI bus', async () => {
    await expect(new GenericDriver({ host: 'h', sysfsRoot: '/nonexistent', hostOps: 'simulate' }).discover()).resolves.toEqual([]);
  });
});
