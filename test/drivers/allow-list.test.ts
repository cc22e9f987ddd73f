import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AllowList } from '../../drivers/generic/index.js';
import { hostCritical, majorMinor, rootStorageAddress } from '../../drivers/generic/allow-list.js';
import { discoverPci, readPciFunctions } from '../../drivers/generic/index.js';
import { buildHost, NVIDIA_HOST } from '../fixtures/vendors/hosts.js';

describe('the allow-list never admits what the host needs', () => {
  it('a vendor-only entry admits no bridge and not the console display', async () => {
    const root = buildHost(NVIDIA_HOST, 'allow');
    const fns = await readPciFunctions(root);
    const intel = AllowList.fromJson('{"vendor_id": "8086"}')!;
    // The host bridge and root ports are Intel's: none is admitted.
    expect(fns.filter((f) => f.vendorId === '8086').every((f) => intel.match(f) === undefined)).toBe(true);
    const all = AllowList.fromJson('[{"vendor_id": "10de"}, {"vendor_id": "1a03"}]')!;
    expect(all.match(fns.find((f) => f.address === '0000:02:00.0')!)).toBeUndefined();
    const found = discoverPci(fns, { host: 'h', driverName: 'generic', allow: AllowList.fromJson('{"vendor_id": "8086"}') });
    expect(found.devices).toEqual([]);
  });

  it("keeps Nova's physical_network tag on the entry and names why a function is critical", () => {
    const a = AllowList.fromJson('{"devname": "ens1f0", "physical_network": "physnet1"}')!;
    expect(a.match({ address: '0000:3b:00.0', vendorId: '8086', productId: '1572', netdevs: ['ens1f0'], classCode: '020000' })?.physical_network).toBe(
      'physnet1',
    );
    expect(hostCritical({ address: '0000:00:00.0', classCode: '060000' })).toBe('bridge');
    expect(hostCritical({ address: '0000:02:00.0', classCode: '030000', bootVga: true })).toBe('console');
    expect(hostCritical({ address: '0000:da:00.0', classCode: '010802' }, new Set(['0000:da:00.0']))).toBe('root_storage');
    expect(a.match({ address: '0000:da:00.0', vendorId: '8086', productId: '0a54', netdevs: ['ens1f0'] }, new Set(['0000:da:00.0']))).toBeUndefined();
  });

  it('finds the controller of the root file system through /sys/dev/block', async () => {
    const root = mkdtempSync(join(tmpdir(), 'cyborg-root-'));
    const dev = (259 << 8) | 1;
    mkdirSync(join(root, 'dev', 'block'), { recursive: true });
    symlinkSync('../../devices/pci0000:d7/0000:d7:00.0/0000:d8:00.0/nvme/nvme0/nvme0n1/nvme0n1p1', join(root, 'dev', 'block', majorMinor(dev)));
    expect(majorMinor(dev)).toBe('259:1');
    expect(await rootStorageAddress(root, dev)).toBe('0000:d8:00.0');
    expect(await rootStorageAddress(root, 42)).toBeUndefined();
  });
});
