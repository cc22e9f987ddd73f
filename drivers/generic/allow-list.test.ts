import { describe, expect, it } from 'vitest';
import { AllowList } from './allow-list.js';
import { pciInfo, pyJson } from './pci.js';

const fn = (address: string, vendorId = '8086', productId = '154c', netdevs: string[] = []) => ({ address, vendorId, productId, netdevs });

describe('allow-list (Nova passthrough_whitelist format)', () => {
  it("is absent when empty: the driver's defaults apply", () => {
    expect(AllowList.fromJson('')).toBeNull();
    expect(AllowList.fromJson('  ')).toBeNull();
  });

  it('matches vendor and product ids with or without 0x, in any case', () => {
    const a = AllowList.fromJson('{"vendor_id": "0x8086", "product_id": "154C"}')!;
    expect(a.match(fn('0000:3b:02.0'))).toBeDefined();
    expect(a.match(fn('0000:3b:02.0', '8086', '1572'))).toBeUndefined();
  });

  it('reads address globs as Nova does: missing or * fields match anything, given ones are hex numbers', () => {
    const cases: [string, string, boolean][] = [
      ['0000:3b:02.1', '0000:3b:02.1', true],
      ['0000:3b:02.1', '0000:3b:02.2', false],
      ['*:3b:02.*', '0001:3b:02.7', true],
      [':3b:02.', '0000:3b:02.3', true],
      ['3b:02.1', '0000:3b:02.1', true],
      ['02.1', '0000:3c:02.1', true],
      ['0:3b:2.1', '0000:3b:02.1', true],
      ['0000:3b:*.*', '0000:3c:00.0', false],
    ];
    for (const [glob, address, want] of cases) {
      expect(AllowList.fromJson(JSON.stringify({ address: glob }))!.match(fn(address)) !== undefined, `${glob} vs ${address}`).toBe(want);
    }
  });

  it('reads an address object as regular expressions per field', () => {
    const a = AllowList.fromJson('[{"address": {"bus": "3[bc]", "function": "[0-3]"}}]')!;
    expect(a.match(fn('0000:3c:02.3'))).toBeDefined();
    expect(a.match(fn('0000:3c:02.4'))).toBeUndefined();
  });

  it('matches a network interface name', () => {
    const a = AllowList.fromJson('{"devname": "ens1f0"}')!;
    expect(a.match(fn('0000:3b:00.0', '8086', '1572', ['ens1f0']))).toBeDefined();
    expect(a.match(fn('0000:3b:00.1', '8086', '1572', ['ens1f1']))).toBeUndefined();
  });

  it('never admits a bridge or the console display, even when the entry names its vendor, product and address', () => {
    const nf200 = { ...fn('0000:b1:00.0', '10de', '05b1'), classCode: '060400' };
    const console = { ...fn('0000:02:00.0', '10de', '1eb8'), classCode: '030000', bootVga: true };
    const a = AllowList.fromJson(
      JSON.stringify([
        { vendor_id: '10de', product_id: '05b1', address: '0000:b1:00.0' },
        { vendor_id: '10de', product_id: '1eb8', address: '0000:02:00.0' },
      ]),
    )!;
    expect(a.match(nf200)).toBeUndefined();
    expect(a.match({ ...nf200, classCode: '060000' })).toBeUndefined();
    expect(a.match(console)).toBeUndefined();
    // The same functions, as an accelerator and a display that is not the console, are admitted.
    expect(a.match({ ...nf200, classCode: '120000' })).toBeDefined();
    expect(a.match({ ...console, bootVga: false })).toBeDefined();
  });

  it('names what is wrong with an entry', () => {
    expect(() => AllowList.fromJson('[1]')).toThrow('whitelist entry 0 is not an object');
    expect(() => AllowList.fromJson('{"vendor_id": "80860"}')).toThrow('vendor_id must be 1-4 hex digits');
    expect(() => AllowList.fromJson('{"address": "1:2:3:4.0"}')).toThrow('has too many ":"');
    expect(() => AllowList.fromJson('{"address": {"bus": "("}}')).toThrow('is not a regular expression');
  });
});

describe("Cyborg's PCI JSON", () => {
  it('is Python json.dumps(sort_keys=True), byte for byte', () => {
    expect(pciInfo('0000:84:00.0')).toBe('{"bus": "84", "device": "00", "domain": "0000", "function": "0"}');
    expect(pyJson({ vgpu_mark: 'nvidia-223_0', asked_type: 'nvidia-223' })).toBe('{"asked_type": "nvidia-223", "vgpu_mark": "nvidia-223_0"}');
    expect(() => pciInfo('3b:00.0')).toThrow('not a PCI address');
  });
});
