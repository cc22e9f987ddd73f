import type { Driver } from './driver.js';
import { productNames } from './pci-ids.js';
import { FakeDriver, type FakeDriverOptions } from './fake/index.js';
import { IntelFpgaDriver, XilinxFpgaDriver } from './fpga/index.js';
import { GenericDriver, type GenericDriverOptions } from './generic/index.js';
import { IntelNicDriver } from './nic/index.js';
import { NvidiaGpuDriver, type XidPolicy } from './nvidia/index.js';
import { PciDriver } from './pci/index.js';
import { IntelQatDriver } from './qat/index.js';
import { CyborgError } from '../errors/index.js';

/** The drivers installed on one host, by name. Several backends may run side by side. */
export class DriverRegistry {
  private drivers = new Map<string, Driver>();

  constructor(drivers: Driver[] = []) {
    for (const d of drivers) this.add(d);
  }

  add(driver: Driver): void {
    if (this.drivers.has(driver.name)) throw new CyborgError('internal.error', `driver ${driver.name} is already registered`);
    this.drivers.set(driver.name, driver);
  }

  remove(name: string): boolean {
    return this.drivers.delete(name);
  }

  get(name: string): Driver | undefined {
    return this.drivers.get(name);
  }

  list(): Driver[] {
    return [...this.drivers.values()];
  }
}

/**
 * What the vendor drivers are built from: one section per driver, as cyborg.conf names them
 * (docs/drivers.md maps each key). Every path under `sysfsRoot`, so a demo or a test runs the
 * real drivers on a fixture tree.
 */
export interface DriverSettings {
  host: string;
  /** Where sysfs is mounted (`/sys`). */
  sysfsRoot?: string;
  /** Where drivers remember operator choices across reboots (MIG layouts, VF counts, programmed images). */
  stateDir?: string;
  fake?: Omit<FakeDriverOptions, 'host'>;
  generic?: Omit<GenericDriverOptions, 'host' | 'sysfsRoot'>;
  /** `[gpu_devices]` and its `[vgpu_<type>]` sections. */
  gpu?: {
    vgpuTypes?: Record<string, string[]>;
    filterSriovVfs?: boolean;
    nvidiaSmi?: string[];
    commandTimeoutMs?: number;
    xidCommand?: string[];
    xidPolicy?: XidPolicy;
    migHostAttach?: boolean;
    legacyTraits?: boolean;
    /** The pci.ids file whose names are the GPUs' model when nvidia-smi does not say. */
    pciIds?: string;
  };
  /** `[fpga]`: the programming tools (argv templates) and their deadline. */
  fpga?: { intelProgramCommand?: string[]; xilinxProgramCommand?: string[]; programTimeoutMs?: number; intelKnownIds?: string[] };
  /** `[nic_devices]` and its `[<nic type>]` section. */
  nic?: { knownIds?: string[]; physicalDeviceMappings?: string[]; functionDeviceMappings?: string[] };
  qat?: { knownIds?: string[] };
}

type Factory = (s: DriverSettings, sysfsRoot: string) => Driver;

/**
 * The names operators write in `[agent] enabled_drivers`, as OpenStack Cyborg names its entry
 * points, plus this project's generic driver (`generic`, older spelling `generic_driver`).
 */
export const DRIVER_FACTORIES: Readonly<Record<string, Factory>> = {
  fake_driver: (s) => new FakeDriver({ host: s.host, ...s.fake }),
  generic: (s, root) => new GenericDriver({ ...s.generic, host: s.host, sysfsRoot: root }),
  generic_driver: (s, root) => new GenericDriver({ ...s.generic, host: s.host, sysfsRoot: root }),
  nvidia_gpu_driver: (s, root) =>
    new NvidiaGpuDriver({ host: s.host, sysfsRoot: root, stateDir: s.stateDir, ...s.gpu, modelNames: productNames(s.gpu?.pciIds, '10de') }),
  intel_fpga_driver: (s, root) =>
    new IntelFpgaDriver({
      host: s.host,
      sysfsRoot: root,
      stateDir: s.stateDir,
      programCommand: s.fpga?.intelProgramCommand,
      programTimeoutMs: s.fpga?.programTimeoutMs,
      knownIds: s.fpga?.intelKnownIds,
    }),
  xilinx_fpga_driver: (s, root) =>
    new XilinxFpgaDriver({
      host: s.host,
      sysfsRoot: root,
      stateDir: s.stateDir,
      programCommand: s.fpga?.xilinxProgramCommand,
      programTimeoutMs: s.fpga?.programTimeoutMs,
    }),
  intel_nic_driver: (s, root) => new IntelNicDriver({ host: s.host, sysfsRoot: root, stateDir: s.stateDir, ...s.nic }),
  intel_qat_driver: (s, root) => new IntelQatDriver({ host: s.host, sysfsRoot: root, stateDir: s.stateDir, ...s.qat }),
  pci_driver: (s, root) => new PciDriver({ host: s.host, sysfsRoot: root, allowList: s.generic?.allowList }),
};

/** Builds the named drivers; an unknown name fails (as Cyborg's agent does), naming the known ones. */
export function createDrivers(names: readonly string[], settings: DriverSettings): Driver[] {
  const unique = [...new Set(names.map((n) => (n === 'generic_driver' ? 'generic' : n)))];
  return unique.map((n) => {
    const make = DRIVER_FACTORIES[n];
    if (!make) throw new CyborgError('config.invalid', `[agent] enabled_drivers: unknown driver ${n} (known: ${Object.keys(DRIVER_FACTORIES).join(', ')})`);
    return make(settings, settings.sysfsRoot ?? '/sys');
  });
}
