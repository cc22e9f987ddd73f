import type { PciFunction } from './sysfs.js';
import type { DeviceT } from '../../model/index.js';

/**
 * The table that turns a PCI function into an accelerator kind: Cyborg device type, Placement
 * resource class, trait prefix. Rows are tried in order; vendor/product rows come before the
 * class-wide ones so that, say, a QAT card (class 0b40) is not taken for a generic co-processor.
 */
export interface KindRule {
  /** Class-code prefixes in hex (`0302` = 3D controller, `12` = processing accelerator). */
  classes?: string[];
  vendor?: string;
  products?: string[];
  type: DeviceT['type'];
  /** Resource class of a whole function (PF passthrough). */
  rc: string;
  /** Resource class of each virtual function when SR-IOV is enabled. */
  vfRc: string;
  /** Traits read `CUSTOM_<prefix>_<VENDOR>`, `CUSTOM_<prefix>_PRODUCT_ID_<PID>`. */
  traitPrefix: string;
  /** The functions of one slot form one card (Xilinx management + user PFs), as Cyborg's Xilinx driver. */
  groupFunctions?: boolean;
  /** Reported only with VFs enabled or when allow-listed: a host's own NICs are not accelerators. */
  needsVfsOrAllowList?: boolean;
  /** Reported only when allow-listed (storage: the host may boot from it). */
  allowListOnly?: boolean;
}

export const KIND_TABLE: readonly KindRule[] = [
  { vendor: '8086', products: ['0435', '37c8', '19e2', '18a0', '4940', '4942', '4944'], type: 'QAT', rc: 'CUSTOM_QAT', vfRc: 'CUSTOM_QAT', traitPrefix: 'QAT' },
  { vendor: '8086', products: ['09c4', '0b2b', '0b30', 'bcc0', 'bcce'], type: 'FPGA', rc: 'FPGA', vfRc: 'FPGA', traitPrefix: 'FPGA' },
  { vendor: '10ee', classes: ['12', '058', '0b4'], type: 'FPGA', rc: 'FPGA', vfRc: 'FPGA', traitPrefix: 'FPGA', groupFunctions: true },
  { vendor: '1bd4', classes: ['12'], type: 'FPGA', rc: 'FPGA', vfRc: 'FPGA', traitPrefix: 'FPGA' },
  { vendor: '19e5', products: ['d100', 'd500', 'd801', 'd802'], type: 'AICHIP', rc: 'CUSTOM_AICHIP', vfRc: 'CUSTOM_AICHIP', traitPrefix: 'AICHIP' },
  { classes: ['0300', '0302', '0380'], type: 'GPU', rc: 'PGPU', vfRc: 'VGPU', traitPrefix: 'GPU' },
  { classes: ['12', '0b40'], type: 'AICHIP', rc: 'CUSTOM_ACCELERATOR', vfRc: 'CUSTOM_ACCELERATOR', traitPrefix: 'ACCELERATOR' },
  { classes: ['0200', '0207', '0280'], type: 'NIC', rc: 'CUSTOM_NIC', vfRc: 'CUSTOM_NIC', traitPrefix: 'NIC', needsVfsOrAllowList: true },
  { classes: ['0108'], type: 'SSD', rc: 'CUSTOM_SSD', vfRc: 'CUSTOM_SSD', traitPrefix: 'SSD', allowListOnly: true },
];

/**
 * What an allow-listed function no row knows becomes: Cyborg's own `pci_driver` reports such
 * devices as type GPU with resource class CUSTOM_PCI, and we keep that for compatibility.
 */
export const UNKNOWN_KIND: KindRule = { type: 'GPU', rc: 'CUSTOM_PCI', vfRc: 'CUSTOM_PCI', traitPrefix: 'PCI' };

/** Vendor names used in traits and models (`CUSTOM_GPU_NVIDIA`). Unknown vendors get no vendor trait. */
export const VENDOR_NAMES: Readonly<Record<string, string>> = {
  '8086': 'INTEL',
  '10de': 'NVIDIA',
  '1002': 'AMD',
  '10ee': 'XILINX',
  '15b3': 'MELLANOX',
  '19e5': 'HUAWEI',
  '1bd4': 'INSPUR',
  '14e4': 'BROADCOM',
  '1077': 'QLOGIC',
  '1924': 'SOLARFLARE',
  '1d0f': 'AMAZON',
  '1ded': 'ALIBABA',
};

/** Product names for models; the rest read `PCI <vendor>:<product>`. */
export const PRODUCT_NAMES: Readonly<Record<string, string>> = {
  '10de:1eb8': 'Tesla T4',
  '10de:1db4': 'Tesla V100 PCIe 16GB',
  '10de:20b0': 'A100 SXM4 40GB',
  '10de:2330': 'H100 SXM5 80GB',
  '10de:2331': 'H100 PCIe',
  '10de:26b9': 'L40S',
  '8086:56c0': 'Data Center GPU Flex 170',
  '8086:56c1': 'Data Center GPU Flex 140',
  '8086:09c4': 'PAC Arria 10 GX',
  '8086:0b2b': 'PAC D5005',
  '8086:0b30': 'FPGA PAC N3000',
  '10ee:5004': 'Alveo U250 (management)',
  '10ee:5005': 'Alveo U250 (user)',
  '8086:37c8': 'QuickAssist C62x',
  '8086:4940': 'QuickAssist 4xxx',
  '8086:1572': 'Ethernet Controller X710 10GbE SFP+',
  '8086:158b': 'Ethernet Controller XXV710 25GbE SFP28',
  '8086:1521': 'I350 Gigabit Network Connection',
  '15b3:1017': 'ConnectX-5',
  '15b3:101b': 'ConnectX-6',
  '1a03:2000': 'ASPEED Graphics Family',
  '19e5:d100': 'Ascend 310',
};

/** The first table row this function fits, or undefined. */
export function kindOf(fn: Pick<PciFunction, 'classCode' | 'vendorId' | 'productId'>): KindRule | undefined {
  return KIND_TABLE.find(
    (r) =>
      (r.vendor === undefined || r.vendor === fn.vendorId) &&
      (r.products === undefined || r.products.includes(fn.productId)) &&
      (r.classes === undefined || r.classes.some((c) => fn.classCode.startsWith(c))),
  );
}

export function modelOf(fn: Pick<PciFunction, 'vendorId' | 'productId'>): string {
  return PRODUCT_NAMES[`${fn.vendorId}:${fn.productId}`] ?? `PCI ${fn.vendorId}:${fn.productId}`;
}

/** A trait or custom resource-class name: upper case, `[A-Z0-9_]` only. */
export function traitName(...parts: string[]): string {
  return parts
    .join('_')
    .toUpperCase()
    .replace(/[^A-Z0-9_]/g, '_');
}

/** The traits of a deployable built from `fn` (see docs/generic-driver.md for the list). */
export function baseTraits(rule: KindRule, fn: Pick<PciFunction, 'vendorId' | 'productId'>): string[] {
  const vendor = VENDOR_NAMES[fn.vendorId];
  return [
    'OWNER_CYBORG',
    ...(vendor ? [traitName('CUSTOM', rule.traitPrefix, vendor)] : []),
    traitName('CUSTOM', rule.traitPrefix, 'PRODUCT_ID', fn.productId),
  ];
}
