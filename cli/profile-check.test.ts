import { describe, expect, it } from 'vitest';
import type { DeviceT } from '../model/index.js';
import { unmatchedProfiles } from './profile-check.js';

const gpu = (name: string, traits: string[]): DeviceT => ({
  uuid: 'd',
  type: 'GPU',
  vendor: '10de',
  model: 'm',
  stdBoardInfo: '{}',
  vendorBoardInfo: '',
  stub: false,
  controlPath: { type: 'PCI', info: '{}' },
  driver: 'nvidia_gpu_driver',
  deployables: [
    {
      uuid: 'x',
      name,
      numAccelerators: 1,
      driverName: 'NVIDIA',
      attributes: [{ key: 'rc', value: 'PGPU' }, ...traits.map((t, i) => ({ key: `trait${i}`, value: t }))],
      attachHandles: [],
    },
  ],
});

describe('cyborg status upgrade-check: profiles that would match nothing', () => {
  const inventories = new Map([['c1', [gpu('c1_0000:43:00.0', ['OWNER_CYBORG', 'CUSTOM_NVIDIA_2331'])]]]);

  it('names each profile no provider can take, with the spelling that would fix it', () => {
    expect(
      unmatchedProfiles(
        [
          { name: 'today', groups: [{ 'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_2331': 'required' }] },
          { name: 'yoga', groups: [{ 'resources:PGPU': '1', 'trait:CUSTOM_GPU_NVIDIA': 'required', 'trait:CUSTOM_GPU_PRODUCT_ID_2331': 'required' }] },
          { name: 'epoxy-pci', groups: [{ 'resources:CUSTOM_PCI': '1', 'trait:CUSTOM_PCI_PRODUCT_ID_2331': 'required' }] },
          { name: 'not-h100', groups: [{ 'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_2331': 'forbidden' }] },
          { name: 'broken', groups: [{ 'resources:PGPU': 'x' }] },
        ],
        inventories,
      ),
    ).toEqual([
      "yoga (PGPU=1, +CUSTOM_GPU_NVIDIA, +CUSTOM_GPU_PRODUCT_ID_2331) matches no provider: Cyborg ≤ 10.0.0's NVIDIA spelling: set [gpu_devices] legacy_traits = true, or rewrite the profile with CUSTOM_NVIDIA_<PID>",
      "epoxy-pci (CUSTOM_PCI=1, +CUSTOM_PCI_PRODUCT_ID_2331) matches no provider: Cyborg 2025.1's pci_driver spelling: add pci_driver to [agent] enabled_drivers for these devices, or rewrite the profile for the driver that reports them",
      'not-h100 (PGPU=1, !CUSTOM_NVIDIA_2331) matches no provider',
      'broken: unreadable (groups[0].resources:PGPU: the amount "x" is not a positive integer)',
    ]);
  });
});
