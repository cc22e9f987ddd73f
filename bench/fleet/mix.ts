/**
 * bench:fleet's `--mix`: simulated hosts that run the real vendor drivers on the vendor fixtures'
 * sysfs trees instead of the fake driver, one kind per host in turn (NVIDIA with its fake
 * nvidia-smi, Intel and Xilinx FPGA, Intel NIC and QAT VFs, the generic driver, the fake one). Each
 * host names its devices after itself, as the drivers do, so every host's inventory is its own.
 */
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Driver, createDrivers } from '../../drivers/index.js';
import { buildHost, FPGA_VENDOR_HOST, NIC_HOST, NVIDIA_HOST } from '../../test/fixtures/vendors/hosts.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'vendors');

export const MIX_KINDS = [
  'nvidia_gpu_driver',
  'intel_fpga_driver',
  'xilinx_fpga_driver',
  'intel_nic_driver',
  'intel_qat_driver',
  'generic',
  'fake_driver',
] as const;

/**
 * Each host's drivers, discovered once before the clock starts: the first discovery the agent
 * runs answers what that pass found, so the cold start measures the conductor registering a mixed
 * fleet, not this process running 10,000 hosts' discoveries on one core (the discovery section
 * times those per kind). Later discoveries are the driver's own.
 */
export async function discoveredFirst(drivers: Driver[]): Promise<Driver[]> {
  for (const d of drivers) {
    let first: Awaited<ReturnType<Driver['discover']>> | undefined = await d.discover();
    const real = d.discover.bind(d);
    d.discover = async () => {
      const found = first;
      first = undefined;
      return found ?? real();
    };
  }
  return drivers;
}

/** A factory of each host's drivers: the kind of host `i` is `MIX_KINDS[i % MIX_KINDS.length]`. */
export function mixedDrivers(): { kindOf: (i: number) => string; driversFor: (host: string, i: number) => Driver[] } {
  const smi = join(mkdtempSync(join(tmpdir(), 'cyborg-bench-smi-')), 'h100');
  cpSync(join(FIXTURES, 'nvidia-smi', 'h100'), smi, { recursive: true });
  const roots: Record<string, string | undefined> = {
    nvidia_gpu_driver: buildHost(NVIDIA_HOST, 'mix-nvidia'),
    generic: buildHost(NVIDIA_HOST, 'mix-generic'),
    intel_fpga_driver: buildHost(FPGA_VENDOR_HOST, 'mix-fpga'),
    xilinx_fpga_driver: buildHost(FPGA_VENDOR_HOST, 'mix-fpga-x'),
    intel_nic_driver: buildHost(NIC_HOST, 'mix-nic'),
    intel_qat_driver: buildHost(NIC_HOST, 'mix-qat'),
  };
  const stateDir = mkdtempSync(join(tmpdir(), 'cyborg-bench-mix-state-'));
  const kindOf = (i: number): string => MIX_KINDS[i % MIX_KINDS.length]!;
  return {
    kindOf,
    driversFor: (host, i) =>
      createDrivers([kindOf(i)], {
        host,
        sysfsRoot: roots[kindOf(i)],
        stateDir,
        gpu: { nvidiaSmi: ['sh', join(FIXTURES, 'bin', 'fake-nvidia-smi.sh'), smi] },
        fake: { gpus: 9, nics: 0 },
      }),
  };
}
