import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { guestHolds, parseGuest, readGuests } from './guests.js';
import type { DeviceT } from '../../model/index.js';

const dir = fileURLToPath(new URL('../../test/fixtures/libvirt/', import.meta.url));

describe('the running guests libvirt keeps under /run/libvirt/qemu', () => {
  it("reads each domain's instance uuid, its mdevs and its PCI functions; other files and guests without devices are no trouble", async () => {
    expect(await readGuests(dir)).toEqual([
      {
        instanceUuid: '7f3c2a10-5b4e-4d2f-9a61-0c8e1d2b3a4f',
        projectId: '4f0b2c6e8a1d4e3f9b7c5a2d1e0f3b6c',
        mdevs: ['b7d0c1e2-3f4a-4b5c-8d6e-7f8091a2b3c4'],
        pci: ['0000:43:00.0'],
      },
      { instanceUuid: '0a9b8c7d-6e5f-4a3b-9c2d-1e0f2a3b4c5d', projectId: null, mdevs: [], pci: [] },
    ]);
    expect(await readGuests('/nonexistent/libvirt')).toEqual([]);
  });

  it('tells what exists but cannot be read (a domain file, the directory), and says nothing of a host without libvirt', async () => {
    const root = mkdtempSync(join(tmpdir(), 'guests-'));
    try {
      // Root reads a file of any mode: a directory in a file's place fails the read as EACCES would.
      mkdirSync(join(root, 'instance-00000001.xml'));
      const told: string[] = [];
      expect(await readGuests(root, (path) => told.push(path))).toEqual([]);
      writeFileSync(join(root, 'not-a-dir'), '');
      expect(await readGuests(join(root, 'not-a-dir'), (path) => told.push(path))).toEqual([]);
      expect(await readGuests(join(root, 'absent'), (path) => told.push(path))).toEqual([]);
      expect(told).toEqual([join(root, 'instance-00000001.xml'), join(root, 'not-a-dir')]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('reads a bare <domain> (virsh dumpxml) as well, and nothing from what is not XML or has no uuid', () => {
    const xml =
      "<domain type='kvm'><uuid>7F3C2A10-5B4E-4D2F-9A61-0C8E1D2B3A4F</uuid><devices><hostdev mode='subsystem' type='pci'><source><address domain='0x0000' bus='0x3b' slot='0x00' function='0x1'/></source></hostdev></devices></domain>";
    expect(parseGuest(xml)).toEqual({ instanceUuid: '7f3c2a10-5b4e-4d2f-9a61-0c8e1d2b3a4f', projectId: null, mdevs: [], pci: ['0000:3b:00.1'] });
    for (const bad of [
      '',
      '<domain><uuid>x</uuid></domain>',
      '<<<',
      "<domain><uuid>7f3c2a10-5b4e-4d2f-9a61-0c8e1d2b3a4f</uuid><devices><hostdev type='pci'><source><address bus='zz'/></source></hostdev></devices></domain>",
    ]) {
      expect(parseGuest(bad)?.pci ?? []).toEqual([]);
    }
  });

  it('matches an MDEV handle by its uuid and a PCI handle by its function', () => {
    const handle = (uuid: string, attachType: 'PCI' | 'MDEV', attachInfo: string) => ({ uuid, attachType, attachInfo, inUse: false });
    const devices = [
      {
        deployables: [
          {
            uuid: 'dep-vgpu',
            attachHandles: [
              handle(
                'b7d0c1e2-3f4a-4b5c-8d6e-7f8091a2b3c4',
                'MDEV',
                '{"asked_type": "nvidia-699", "bus": "b1", "device": "00", "domain": "0000", "function": "4", "vgpu_mark": "nvidia-699_0"}',
              ),
              handle('h-2', 'MDEV', '{}'),
            ],
          },
          { uuid: 'dep-h100', attachHandles: [handle('h-3', 'PCI', '{"bus": "43", "device": "00", "domain": "0000", "function": "0"}')] },
          { uuid: 'dep-other', attachHandles: [handle('h-4', 'PCI', '{"bus": "44", "device": "00", "domain": "0000", "function": "0"}')] },
        ],
      },
    ] as unknown as DeviceT[];
    const guests = [{ instanceUuid: 'i-1', projectId: 'p-1', mdevs: ['b7d0c1e2-3f4a-4b5c-8d6e-7f8091a2b3c4'], pci: ['0000:43:00.0'] }];
    expect(guestHolds(devices, guests)).toEqual([
      { deployableUuid: 'dep-vgpu', handleUuid: 'b7d0c1e2-3f4a-4b5c-8d6e-7f8091a2b3c4', instanceUuid: 'i-1', projectId: 'p-1' },
      { deployableUuid: 'dep-h100', handleUuid: 'h-3', instanceUuid: 'i-1', projectId: 'p-1' },
    ]);
  });
});
