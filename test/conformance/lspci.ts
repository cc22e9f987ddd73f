import { readPciFunctions } from '../../drivers/generic/index.js';

/** The class names lspci prints, for the classes in the fixtures. */
const CLASS_NAMES: Record<string, string> = {
  '0300': 'VGA compatible controller',
  '0302': '3D controller',
  '0200': 'Ethernet controller',
  '1200': 'Processing accelerators',
  '0b40': 'Co-processor',
  '0604': 'PCI bridge',
  '0600': 'Host bridge',
};

const VENDOR_NAMES: Record<string, string> = {
  '10de': 'NVIDIA Corporation',
  '8086': 'Intel Corporation',
  '10ee': 'Xilinx Corporation',
  '1a03': 'ASPEED Technology, Inc.',
};

/**
 * What `lspci -nnn -D` prints for a sysfs tree, one line per function in address order:
 * `0000:3b:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:1eb8] (rev a1)` — the
 * format pciutils writes (class name and `[cccc]`, vendor and device names, `[vvvv:dddd]`); the
 * device names are pci.ids' business and stay `Device`, as lspci prints an id it does not know.
 */
export async function lspciOf(sysfsRoot: string): Promise<string> {
  const fns = await readPciFunctions(sysfsRoot);
  return (
    fns
      .map((f) => {
        const cls = f.classCode.slice(0, 4);
        return `${f.address} ${CLASS_NAMES[cls] ?? 'Unclassified device'} [${cls}]: ${VENDOR_NAMES[f.vendorId] ?? 'Device'} Device [${f.vendorId}:${f.productId}] (rev a1)`;
      })
      .join('\n') + '\n'
  );
}
