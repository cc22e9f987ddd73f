import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cyborgDeployable, cyborgDevice, customName, pciHandle, pyDumps } from '../cyborg-report.js';
import type { PciFunction } from '../generic/index.js';
import { functionTrait } from '../../placement-query/index.js';
import type { DeviceT } from '../../model/index.js';

/** Cyborg's Intel FPGA product names (`CUSTOM_FPGA_INTEL_<name>`). */
export const INTEL_PRODUCTS: Readonly<Record<string, string>> = { '09c4': 'PAC_ARRIA10' };

async function list(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}

async function line(path: string): Promise<string | null> {
  return readFile(path, 'utf8').then(
    (t) => t.split('\n')[0]!.trim(),
    () => null,
  );
}

/** The OPAE nodes of one function: AFU ids of its ports, PR interface ids of its FME. */
async function opaeIds(root: string, address: string): Promise<{ stub: boolean; afus: string[]; regions: string[] }> {
  const dir = join(root, 'bus', 'pci', 'devices', address, 'fpga');
  const names = await list(dir);
  const afus: string[] = [];
  const regions: string[] = [];
  for (const n of names) {
    for (const sub of await list(join(dir, n))) {
      if (sub.startsWith('intel-fpga-port.')) afus.push(...[await line(join(dir, n, sub, 'afu_id'))].filter((x): x is string => !!x));
      if (sub.startsWith('intel-fpga-fme.')) regions.push(...[await line(join(dir, n, sub, 'pr', 'interface_id'))].filter((x): x is string => !!x));
    }
  }
  return { stub: names.length === 0, afus, regions };
}

/**
 * Cyborg's `intel_fpga_driver`: a known PF without VFs is one deployable; with VFs, one
 * deployable whose accelerators are the VFs (named after the last VF, as Cyborg does). Traits
 * `CUSTOM_FPGA_INTEL`, `CUSTOM_FPGA_INTEL_<PRODUCT>`, then `CUSTOM_FPGA_FUNCTION_ID_INTEL_<AFU>`
 * and `CUSTOM_FPGA_REGION_INTEL_<ID>` of the PF, then those of each VF.
 */
export async function discoverIntel(root: string, host: string, fns: PciFunction[], known: readonly string[], driver: string): Promise<DeviceT[]> {
  const byAddr = new Map(fns.map((f) => [f.address, f]));
  const out: DeviceT[] = [];
  for (const pf of fns.filter((f) => f.physfn === null && known.includes(`${f.vendorId}:${f.productId}`))) {
    const vfs = pf.virtfns.map((a) => byAddr.get(a)).filter((v): v is PciFunction => v !== undefined);
    const own = await opaeIds(root, pf.address);
    const product = INTEL_PRODUCTS[pf.productId];
    const idTraits = (ids: { afus: string[]; regions: string[] }): string[] => [
      ...ids.afus.map((a) => functionTrait('INTEL', a)),
      ...ids.regions.map((r) => customName('FPGA_REGION_INTEL', r)),
    ];
    const traits = own.stub
      ? []
      : ['CUSTOM_FPGA_INTEL', product ? `CUSTOM_FPGA_INTEL_${product}` : customName('FPGA_PRODUCT_ID', pf.productId), ...idTraits(own)];
    for (const vf of vfs) traits.push(...idTraits(await opaeIds(root, vf.address)));
    const members = vfs.length > 0 ? vfs : [pf];
    const name = `${host}_${members.at(-1)!.address}`;
    out.push(
      cyborgDevice({
        host,
        address: pf.address,
        type: 'FPGA',
        vendor: `0x${pf.vendorId}`,
        model: 'miss_model_info',
        stub: own.stub,
        stdBoardInfo: { product_id: `0x${pf.productId}` },
        vendorBoardInfo: 'miss_vb_info',
        driver,
        deployables: [
          cyborgDeployable({
            host,
            name,
            driverName: 'intel',
            rc: 'FPGA',
            traits: [...new Set(traits)],
            handles: members.map((m) => pciHandle(host, name, m.address)),
          }),
        ],
      }),
    );
  }
  return out;
}

/**
 * Cyborg's `xilinx_fpga_driver`: the functions of one slot (management + user PF) are one card,
 * one deployable named after the first, with a PCI handle per function. Traits
 * `CUSTOM_FPGA_XILINX`, `CUSTOM_FPGA_PRODUCT_ID_<pid>`, plus `CUSTOM_FPGA_FUNCTION_ID_XILINX_<id>`
 * of the function last programmed (Cyborg swaps function traits the same way).
 */
export function discoverXilinx(host: string, fns: PciFunction[], functionOf: (address: string) => string | undefined, driver: string): DeviceT[] {
  const xilinx = fns.filter((f) => f.vendorId === '10ee' && f.classCode.startsWith('12') && f.physfn === null);
  const slots = new Map<string, PciFunction[]>();
  for (const f of xilinx) slots.set(f.address.slice(0, -2), [...(slots.get(f.address.slice(0, -2)) ?? []), f]);
  return [...slots.values()].map((members) => {
    const first = members[0]!;
    const name = `${host}_${first.address}`;
    const fn = functionOf(first.address);
    const traits = ['CUSTOM_FPGA_XILINX', `CUSTOM_FPGA_PRODUCT_ID_${first.productId.toUpperCase()}`, ...(fn ? [functionTrait('XILINX', fn)] : [])];
    return cyborgDevice({
      host,
      address: first.address,
      type: 'FPGA',
      vendor: first.vendorId,
      model: 'miss model info',
      stdBoardInfo: { product_id: first.productId, controller: 'Processing accelerators' },
      vendorBoardInfo: pyDumps({ vendor_info: 'fpga_vb_info' }),
      driver,
      deployables: [
        cyborgDeployable({
          host,
          name,
          driverName: 'XILINX',
          rc: 'FPGA',
          traits,
          handles: members.map((m) => pciHandle(host, name, m.address)),
          numAccelerators: 1,
        }),
      ],
    });
  });
}
