import { FakeDriver } from '../drivers/index.js';
import { stableId } from '../ids/index.js';
import type { DeviceT } from '../model/index.js';

/**
 * Our driver that takes over a Cyborg device, by the deployable's `driver_name` and the device's
 * type (Cyborg's drivers write `fake`, `intel`, `XILINX`, `NVIDIA`…); none: a driver we do not have.
 */
export function driverFor(cyborgDriver: string, type: string): string | undefined {
  const d = cyborgDriver.toLowerCase();
  if (d === 'fake') return 'fake';
  if (d === 'intel') return { FPGA: 'intel_fpga_driver', NIC: 'intel_nic_driver', QAT: 'intel_qat_driver' }[type];
  if (d === 'xilinx' && type === 'FPGA') return 'xilinx_fpga_driver';
  if (d === 'nvidia' && type === 'GPU') return 'nvidia_gpu_driver';
  return undefined;
}

/**
 * The ids our agent will report for an adopted device, deployable and attach handle. The
 * conductor keys accelerators by the deployable ids its agents report (ids/index.ts: derived from
 * the host and stable facts), so an adopted record must carry the same, or the first report would
 * remove it and add a twin with the same resource provider (a provider deleted and re-created).
 * Cyborg's own uuids are kept beside (the adoption record, docs/adopt.md); resource-provider
 * uuids are uuid3 of the deployable's name on both sides, so they do not change.
 */
export interface OurIds {
  device(cpidInfo: string): string;
  deployable(name: string): string;
  /** undefined: our driver reports no such handle (the adopted device would not match the first report). */
  handle(deployableName: string, attachInfo: string): string | undefined;
}

/** Ours for `driver` on `host`: the fake driver's by running it; the others' by the rule all of them follow (drivers/cyborg-report.ts). */
export async function ourIds(driver: string, host: string): Promise<OurIds> {
  if (driver === 'fake') return fakeIds(host);
  return {
    device: (cpidInfo) => stableId(host, 'pci', addressOf(cpidInfo)),
    deployable: (name) => stableId(host, 'deployable', name),
    handle: (name, attachInfo) => stableId(host, 'handle', name, attachInfo),
  };
}

async function fakeIds(host: string): Promise<OurIds> {
  // Its devices are fixed by the host's name: what it discovers here is what it will report there.
  const devices: DeviceT[] = await new FakeDriver({ host }).discover();
  return {
    device: (cpidInfo) => devices.find((d) => d.controlPath.info === cpidInfo)?.uuid ?? stableId(host, 'fake', cpidInfo),
    deployable: (name) => stableId(host, 'deployable', name),
    handle: (name, attachInfo) =>
      devices
        .flatMap((d) => d.deployables)
        .find((x) => x.name === name)
        ?.attachHandles.find((h) => h.attachInfo === attachInfo)?.uuid,
  };
}

/** `{"domain": "0000", "bus": "3b", "device": "02", "function": "0"}` → `0000:3b:02.0`; the text itself when it is not that JSON. */
function addressOf(cpidInfo: string): string {
  try {
    const j = JSON.parse(cpidInfo) as Record<string, string>;
    return `${j.domain}:${j.bus}:${j.device}.${j.function}`;
  } catch {
    return cpidInfo;
  }
}
