/**
 * bench:fleet's discovery section: what one discovery pass costs an agent, per driver kind, on
 * the vendor fixtures' sysfs trees (test/fixtures/vendors/: the NVIDIA host with the fake
 * nvidia-smi, the Intel/Xilinx FPGA host, the NIC and QAT host) — the real drivers, built as the
 * agent builds them (`createDrivers`). Prints p50/p99 ms per host and devices found for each kind.
 */
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDrivers, type DriverSettings } from '../../drivers/index.js';
import { buildHost, FPGA_VENDOR_HOST, NIC_HOST, NVIDIA_HOST } from '../../test/fixtures/vendors/hosts.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'vendors');

function pct(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function discoverySection(passes: number): Promise<void> {
  const smi = join(mkdtempSync(join(tmpdir(), 'cyborg-bench-smi-')), 'h100');
  cpSync(join(FIXTURES, 'nvidia-smi', 'h100'), smi, { recursive: true });
  const roots = { nvidia: buildHost(NVIDIA_HOST, 'bench-nvidia'), fpga: buildHost(FPGA_VENDOR_HOST, 'bench-fpga'), nic: buildHost(NIC_HOST, 'bench-nic') };
  const kinds: [string, string | undefined, string][] = [
    ['nvidia_gpu_driver', roots.nvidia, 'NVIDIA host (H100 ×2, A10, A16; fake nvidia-smi)'],
    ['intel_fpga_driver', roots.fpga, 'FPGA host'],
    ['xilinx_fpga_driver', roots.fpga, 'FPGA host'],
    ['intel_nic_driver', roots.nic, 'NIC host'],
    ['intel_qat_driver', roots.nic, 'NIC host (QAT VFs)'],
    ['generic', roots.nvidia, 'NVIDIA host'],
    ['fake_driver', undefined, '1 FPGA + 9 GPUs, no sysfs'],
  ];
  console.log(`\n== discovery per host, by driver kind (${passes} passes each, vendor fixtures) ==`);
  for (const [kind, root, what] of kinds) {
    const settings: DriverSettings = {
      host: 'bench-host',
      sysfsRoot: root,
      stateDir: mkdtempSync(join(tmpdir(), 'cyborg-bench-state-')),
      gpu: { nvidiaSmi: ['sh', join(FIXTURES, 'bin', 'fake-nvidia-smi.sh'), smi] },
      fake: { gpus: 9, nics: 0 },
    };
    try {
      const [driver] = createDrivers([kind], settings);
      const lat: number[] = [];
      let devices = 0;
      let deployables = 0;
      for (let i = 0; i < passes + 2; i++) {
        const t = performance.now();
        const found = await driver!.discover();
        // The first two warm the JIT and the page cache; not counted.
        if (i >= 2) lat.push(performance.now() - t);
        devices = found.length;
        deployables = found.reduce((n, d) => n + (d.deployables?.length ?? 0), 0);
      }
      lat.sort((a, b) => a - b);
      console.log(
        `  ${kind.padEnd(20)} p50 ${pct(lat, 50).toFixed(2)} ms  p99 ${pct(lat, 99).toFixed(2)} ms per host  (${devices} devices, ${deployables} deployables; ${what})`,
      );
    } catch (err) {
      console.log(`  ${kind.padEnd(20)} failed: ${String(err)}`);
    }
  }
}
