import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AgentCache } from '../../actors/agent/index.js';
import { ConfigError, DRIVER_NAMES, loadConfig } from '../../config/index.js';
import { DRIVER_FACTORIES } from '../../drivers/registry.js';
import { driverSettings, enabledDrivers, restoreHostState } from '../../roles/drivers.js';
import { buildHost, NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { captureLogger, quietLogger } from '../support/log.js';

function conf(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'cyborg-conf-'));
  const path = join(dir, 'cyborg.conf');
  writeFileSync(path, text);
  return path;
}

describe("cyborg.conf written for Cyborg's vendor drivers", () => {
  it('[agent] enabled_drivers takes every name the driver registry builds', () => {
    expect([...DRIVER_NAMES].sort()).toEqual(Object.keys(DRIVER_FACTORIES).sort());
  });

  it("maps [gpu_devices] + [vgpu_<type>], [fpga] and [nic_devices] + [<nic type>] onto the drivers' settings", () => {
    const warnings: string[] = [];
    const path = conf(
      [
        '[DEFAULT]',
        'host = compute1',
        'state_path = /var/lib/cyborg',
        '[agent]',
        'enabled_drivers = nvidia_gpu_driver, intel_nic_driver, intel_fpga_driver',
        '[generic_driver]',
        'sysfs_root = /srv/sys',
        '[gpu_devices]',
        'enabled_vgpu_types = nvidia-35, nvidia-699',
        'filter_sriov_vfs = true',
        'nvidia_smi = /usr/bin/nvidia-smi',
        'command_timeout = 20',
        '[vgpu_nvidia-35]',
        'device_addresses = 0000:84:00.0,0000:85:00.0',
        '[vgpu_nvidia-699]',
        'device_addresses = 0000:b1:00.0',
        '[fpga]',
        'program_command = /opt/bin/program {address} {image}',
        'program_timeout = 120',
        '[nic_devices]',
        'enabled_nic_types = x710_static',
        '[x710_static]',
        'physical_device_mappings = physnet1:ens1f0|ens1f1',
        'function_device_mappings = GTPV1:ens1f0',
        '[x710_unused]',
        'physical_device_mappings = physnet9:ens9f0',
        '',
      ].join('\n'),
    );
    const config = loadConfig({}, {}, { role: 'agent', configFiles: [path], onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([]);
    expect(config.agent.enabledDrivers).toEqual(['nvidia_gpu_driver', 'intel_nic_driver', 'intel_fpga_driver']);
    const s = driverSettings(config);
    expect(s).toMatchObject({
      host: 'compute1',
      sysfsRoot: '/srv/sys',
      stateDir: '/var/lib/cyborg/agent/drivers',
      gpu: {
        vgpuTypes: { 'nvidia-35': ['0000:84:00.0', '0000:85:00.0'], 'nvidia-699': ['0000:b1:00.0'] },
        filterSriovVfs: true,
        nvidiaSmi: ['/usr/bin/nvidia-smi'],
        commandTimeoutMs: 20_000,
      },
      fpga: {
        intelProgramCommand: ['/opt/bin/program', '{address}', '{image}'],
        xilinxProgramCommand: ['/opt/bin/program', '{address}', '{image}'],
        programTimeoutMs: 120_000,
      },
      // Only the enabled NIC type's mappings count.
      nic: { physicalDeviceMappings: ['physnet1:ens1f0|ens1f1'], functionDeviceMappings: ['GTPV1:ens1f0'] },
    });
    expect(enabledDrivers(config, quietLogger()).map((d) => d.name)).toEqual(['nvidia_gpu_driver', 'intel_nic_driver', 'intel_fpga_driver']);
  });

  it('refuses at boot an enabled type without its section, a GPU given two vGPU types, and an unknown driver', () => {
    const noSection = conf('[gpu_devices]\nenabled_vgpu_types = nvidia-35\n');
    expect(() => loadConfig({}, {}, { configFiles: [noSection] })).toThrow(
      new ConfigError(`invalid configuration: ${noSection} [gpu_devices] enabled_vgpu_types: vGPU type nvidia-35 has no [vgpu_nvidia-35] device_addresses`),
    );
    const twice = conf(
      '[gpu_devices]\nenabled_vgpu_types = nvidia-35, nvidia-36\n[vgpu_nvidia-35]\ndevice_addresses = 0000:84:00.0\n[vgpu_nvidia-36]\ndevice_addresses = 0000:84:00.0\n',
    );
    expect(() => loadConfig({}, {}, { configFiles: [twice] })).toThrow(
      `${twice} [vgpu_nvidia-36] device_addresses: GPU 0000:84:00.0 already offers nvidia-35 (one vGPU type per GPU)`,
    );
    const nic = conf('[nic_devices]\nenabled_nic_types = x710_static\n');
    expect(() => loadConfig({}, {}, { configFiles: [nic] })).toThrow('NIC type x710_static has no [x710_static] section');
    const unknown = conf('[agent]\nenabled_drivers = amd_gpu_driver\n');
    expect(() => loadConfig({}, {}, { configFiles: [unknown] })).toThrow(
      /enabled_drivers = amd_gpu_driver: Expected union value \(one of fake_driver, generic, generic_driver, nvidia_gpu_driver/,
    );
  });
});

describe('an agent start after a reboot', () => {
  let root: string;
  beforeAll(() => {
    root = buildHost(NVIDIA_HOST, 'nvidia-wiring');
  });

  it('re-creates the mdev of a handle an ARQ still holds, from the agent cache', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cyborg-agent-'));
    const config = loadConfig(
      {
        host: 'compute1',
        dataDir,
        generic: { sysfsRoot: root },
        gpu: { enabledVgpuTypes: ['nvidia-699'], vgpuDeviceAddresses: { 'nvidia-699': ['0000:b1:00.0'] } },
      },
      { CYBORG_ENABLED_DRIVERS: 'nvidia_gpu_driver' },
      { role: 'agent' },
    );
    const [gpu] = enabledDrivers(config, quietLogger());
    const devices = await gpu!.discover();
    const a16 = devices.flatMap((d) => d.deployables).find((d) => d.name === 'compute1_0000:b1:00.0')!;
    const handle = a16.attachHandles[0]!;
    // Before the reboot: the inventory was reported and an instance was attached to the handle.
    const cache = await AgentCache.open(join(dataDir, 'agent'), 'compute1', [], quietLogger());
    await cache.recordInventory(devices, 1);
    await cache.recordBinding('attach', a16.uuid, handle.uuid);
    await cache.recordBinding('attach', a16.uuid, a16.attachHandles[1]!.uuid);
    await cache.recordBinding('detach', a16.uuid, a16.attachHandles[1]!.uuid);
    // The reboot: the kernel forgot the mdev; the agent opens its cache again with fresh drivers.
    const create = join(root, 'bus/pci/devices/0000:b1:00.4/mdev_supported_types/nvidia-699/create');
    writeFileSync(create, '');
    const reopened = await AgentCache.open(join(dataDir, 'agent'), 'compute1', [], quietLogger());
    const { log, lines } = captureLogger();
    const steps = await restoreHostState(enabledDrivers(config, log), reopened.boundHandles(), log);
    expect(steps).toEqual([
      { driver: 'nvidia_gpu_driver', step: 'restoreBound', ok: true, detail: { restored: [handle.uuid], present: [] } },
      expect.objectContaining({ step: 'reapplyMigLayouts', ok: true }),
    ]);
    expect(readFileSync(create, 'utf8')).toBe(handle.uuid);
    expect(lines.some((l) => l.msg === 'host state restored')).toBe(true);
  });

  it('logs and reports a step that fails, and goes on with the other drivers', async () => {
    const { log, lines } = captureLogger();
    const broken = {
      name: 'nvidia_gpu_driver',
      version: '1',
      discover: async () => [],
      applyMigLayout: async () => ({}),
      reapplyMigLayouts: async () => {
        throw Object.assign(new Error('nvidia-smi: not found'), { code: 'driver.failed', details: { reason: 'binary_missing' } });
      },
    };
    const nic = {
      name: 'intel_nic_driver',
      version: '1',
      discover: async () => [],
      setVfCount: async () => ({}),
      reapplyVfCounts: async () => [{ address: '0000:3b:00.0', numvfs: 8 }],
    };
    const steps = await restoreHostState([broken, nic], new Map(), log);
    expect(steps).toEqual([
      {
        driver: 'nvidia_gpu_driver',
        step: 'reapplyMigLayouts',
        ok: false,
        detail: { code: 'driver.failed', reason: 'nvidia-smi: not found', details: { reason: 'binary_missing' } },
      },
      { driver: 'intel_nic_driver', step: 'reapplyVfCounts', ok: true, detail: [{ address: '0000:3b:00.0', numvfs: 8 }] },
    ]);
    expect(lines.find((l) => l.level === 50)?.msg).toBe('restoring host state after a start failed; the agent goes on without it');
  });
});
