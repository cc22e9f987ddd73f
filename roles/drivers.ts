import { join } from 'node:path';
import type { Logger } from 'pino';
import type { AgentOptions } from '../actors/agent/index.js';
import { ConfigError, cutValue, optionSource, type Config } from '../config/index.js';
import {
  canManageMig,
  canRestoreBound,
  canSetVfCount,
  type BoundHandle,
  type Driver,
  createDrivers,
  type DriverSettings,
  AllowList,
  AllowListError,
  xidPolicy,
} from '../drivers/index.js';
import { warnWhenNothingToDrive } from './empty-drivers.js';

/**
 * What the config schema cannot check without the drivers' code (config/ stays free of it),
 * checked at boot by every role whatever drivers it enables: a whitelist only the generic driver
 * reads today is still a mistake to report before a driver that reads it is enabled tomorrow.
 */
export function checkDriverSettings(config: Config): void {
  try {
    AllowList.fromJson(config.generic.passthroughWhitelist);
  } catch (err) {
    if (!(err instanceof AllowListError)) throw err;
    throw new ConfigError(
      `invalid configuration: ${optionSource(config, 'generic.passthroughWhitelist')} = ${cutValue(config.generic.passthroughWhitelist)}: ${err.message}; write a JSON object or array of objects, as Nova's [pci] passthrough_whitelist`,
    );
  }
}

const argv = (text: string): string[] | undefined => (text.trim() ? text.trim().split(/\s+/) : undefined);

/**
 * The drivers' settings from the configuration, as docs/drivers.md maps cyborg.conf onto them:
 * `[generic_driver]`, `[gpu_devices]` + `[vgpu_<type>]`, `[fpga]`, `[nic_devices]` + `[<nic type>]`,
 * and a state directory under the agent's data dir (MIG layouts, VF counts, programmed images).
 */
export function driverSettings(config: Config): DriverSettings {
  const g = config.generic;
  const commands = {
    ...(argv(g.installCommand) ? { install: argv(g.installCommand) } : {}),
    ...(argv(g.uninstallCommand) ? { uninstall: argv(g.uninstallCommand) } : {}),
    ...(argv(g.updateCommand) ? { update: argv(g.updateCommand) } : {}),
    ...(argv(g.programCommand) ? { program: argv(g.programCommand) } : {}),
  };
  const program = argv(config.fpga.programCommand);
  const nicTypes = config.nic.enabledNicTypes.map((t) => config.nic.types[t]).filter((t) => t !== undefined);
  return {
    host: config.host,
    sysfsRoot: g.sysfsRoot,
    stateDir: join(config.dataDir, 'agent', 'drivers'),
    fake: config.fake,
    generic: { allowList: g.passthroughWhitelist, hostOps: g.hostOps, helper: argv(g.helper) ?? [], commands, vfioDriver: g.vfioDriver, version: g.version },
    gpu: {
      vgpuTypes: Object.fromEntries(config.gpu.enabledVgpuTypes.map((t) => [t, [...(config.gpu.vgpuDeviceAddresses[t] ?? [])]])),
      filterSriovVfs: config.gpu.filterSriovVfs,
      nvidiaSmi: argv(config.gpu.nvidiaSmi) ?? [],
      commandTimeoutMs: config.gpu.commandTimeoutMs,
      xidCommand: argv(config.gpu.xidCommand) ?? [],
      xidPolicy: xidPolicy({
        fatal: config.gpu.xidFatal.map(Number),
        transient: config.gpu.xidTransient.map(Number),
        ignored: config.gpu.xidIgnored.map(Number),
      }),
      migHostAttach: config.gpu.migHostAttach,
      pciIds: config.gpu.pciIds,
      legacyTraits: config.gpu.legacyTraits,
    },
    fpga: {
      ...(program ? { intelProgramCommand: program, xilinxProgramCommand: program } : {}),
      programTimeoutMs: config.fpga.programTimeoutMs,
      intelKnownIds: config.fpga.intelKnownIds,
    },
    nic: {
      physicalDeviceMappings: nicTypes.flatMap((t) => t.physicalDeviceMappings),
      functionDeviceMappings: nicTypes.flatMap((t) => t.functionDeviceMappings),
      knownIds: config.nic.knownIds,
    },
    qat: { knownIds: config.qat.knownIds },
  };
}

/**
 * The drivers of this host, as the operator enabled them (`[agent] enabled_drivers`, Cyborg's
 * option and names; `CYBORG_ENABLED_DRIVERS`). `[generic_driver] enabled` is the older spelling of
 * naming generic_driver there. A production agent enables none by default, so no fake accelerator
 * lands in a real inventory or in Placement.
 */
export function enabledDrivers(config: Config, log: Logger): Driver[] {
  const names = [...config.agent.enabledDrivers, ...(config.generic.enabled ? ['generic_driver'] : [])];
  const drivers = createDrivers(names, driverSettings(config));
  if (drivers.length === 0) log.warn('no driver is enabled on this host: it reports no accelerators (set [agent] enabled_drivers, e.g. generic_driver)');
  else log.info({ drivers: drivers.map((d) => d.name), sysfsRoot: config.generic.sysfsRoot }, 'drivers enabled');
  return warnWhenNothingToDrive(drivers, log, config.generic.sysfsRoot);
}

/**
 * The kernel subsystems whose uevents change what each driver reports: PCI functions come and
 * go, bind and unbind (SR-IOV VFs included); mediated devices are made and removed under vGPU
 * parents. The fake driver's devices do not come from the kernel.
 */
const HOTPLUG_SUBSYSTEMS: Readonly<Record<string, readonly string[]>> = {
  fake: [],
  generic: ['pci', 'mdev'],
  nvidia_gpu_driver: ['pci', 'mdev'],
};

/**
 * What the agent watches for hot-plug (`[agent] hotplug`, `udevadm_command`): the subsystems its
 * drivers care about, or nothing when hot-plug is off or no driver reads the kernel's devices.
 */
export function hotplugFor(config: Config, drivers: readonly Driver[]): AgentOptions['hotplug'] {
  if (config.agent.hotplug === 'off') return undefined;
  const subsystems = [...new Set(drivers.flatMap((d) => HOTPLUG_SUBSYSTEMS[d.name] ?? ['pci']))];
  const command = argv(config.agent.udevadmCommand);
  return subsystems.length > 0 && command ? { command, subsystems } : undefined;
}

/** One step of bringing the host back to what it was before a reboot, as `cyborg agent info` shows it. */
export interface RestoreStep {
  driver: string;
  step: 'restoreBound' | 'reapplyMigLayouts' | 'reapplyVfCounts';
  ok: boolean;
  detail: unknown;
}

/**
 * After a start (a reboot lost mdevs, MIG instances and VF counts): hands each driver the handles
 * ARQs still hold, then re-applies the remembered MIG layouts and VF counts. A failing step is
 * logged and reported, never fatal: the agent still registers and reports what it finds.
 */
export async function restoreHostState(drivers: readonly Driver[], bound: ReadonlyMap<string, readonly BoundHandle[]>, log: Logger): Promise<RestoreStep[]> {
  const steps: RestoreStep[] = [];
  const run = async (driver: string, step: RestoreStep['step'], fn: () => Promise<unknown>): Promise<void> => {
    try {
      const detail = await fn();
      steps.push({ driver, step, ok: true, detail });
      log.info({ driver, step, detail }, 'host state restored');
    } catch (err) {
      const e = err as Error & { code?: string; details?: unknown };
      steps.push({ driver, step, ok: false, detail: { code: e.code ?? 'driver.failed', reason: e.message, ...(e.details ? { details: e.details } : {}) } });
      log.error({ driver, step, err }, 'restoring host state after a start failed; the agent goes on without it');
    }
  };
  for (const d of drivers) {
    const mine = bound.get(d.name) ?? [];
    if (canRestoreBound(d) && mine.length > 0) await run(d.name, 'restoreBound', () => d.restoreBound(mine));
    if (canManageMig(d)) await run(d.name, 'reapplyMigLayouts', () => d.reapplyMigLayouts());
    if (canSetVfCount(d)) await run(d.name, 'reapplyVfCounts', () => d.reapplyVfCounts());
  }
  return steps;
}
