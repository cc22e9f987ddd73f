import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dsnOf, macOf, pcieSerial } from './identity.js';

/** A 4 KiB config space with extended capabilities: AER (0x0001) at 0x100, then the DSN (0x0003) at 0x140. */
function config(serial: bigint | null): Buffer {
  const b = Buffer.alloc(4096);
  b.writeUInt32LE(0x0001 | (1 << 16) | (0x140 << 20), 0x100);
  if (serial !== null) {
    b.writeUInt32LE(0x0003 | (1 << 16), 0x140);
    b.writeUInt32LE(Number(serial & 0xffffffffn), 0x144);
    b.writeUInt32LE(Number(serial >> 32n), 0x148);
  }
  return b;
}

describe('a card’s own serial from sysfs', () => {
  it('reads the PCIe Device Serial Number as lspci prints it', () => {
    expect(dsnOf(config(0x0011_22ff_fe33_4455n))).toBe('00-11-22-ff-fe-33-44-55');
  });
  it('has none without the capability, with a zero serial, or with only the first 256 bytes (not root)', () => {
    expect(dsnOf(config(null))).toBeNull();
    expect(dsnOf(config(0n))).toBeNull();
    expect(dsnOf(config(0x1234n).subarray(0, 256))).toBeNull();
  });
  it('ends on a capability list that loops', () => {
    const b = Buffer.alloc(4096);
    b.writeUInt32LE(0x0001 | (0x100 << 20), 0x100);
    expect(dsnOf(b)).toBeNull();
  });
  it('reads the config file and a NIC’s MAC from a sysfs tree', async () => {
    const root = mkdtempSync(join(tmpdir(), 'cyborg-identity-'));
    const dev = join(root, 'bus', 'pci', 'devices', '0000:3b:00.0');
    mkdirSync(join(dev, 'net', 'ens1f0'), { recursive: true });
    writeFileSync(join(dev, 'config'), config(0xa0b1c2d3e4f5a6b7n));
    writeFileSync(join(dev, 'net', 'ens1f0', 'address'), '3C:FD:FE:A1:B2:C3\n');
    expect(await pcieSerial(root, '0000:3b:00.0')).toBe('a0-b1-c2-d3-e4-f5-a6-b7');
    expect(await pcieSerial(root, '0000:99:00.0')).toBeNull();
    expect(await macOf(root, '0000:3b:00.0', 'ens1f0')).toBe('3c:fd:fe:a1:b2:c3');
    expect(await macOf(root, '0000:3b:00.0', undefined)).toBeNull();
  });
});
