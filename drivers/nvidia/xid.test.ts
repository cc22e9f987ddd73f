import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifyXid, parseXidLine, XidParser, xidPolicy } from './xid.js';

const recorded = (name: string): string => readFileSync(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'vendors', 'xid', name), 'latin1');

describe('reading NVIDIA Xid events from the kernel log', () => {
  it('finds the GPU and the code in dmesg and journalctl lines, and skips the rest of the log', () => {
    const p = new XidParser();
    const events = [...p.push(recorded('fallen-off-bus.log')), ...p.push(recorded('app-fault.log'))];
    expect(events.map((e) => [e.pciPrefix, e.code, e.verdict])).toEqual([
      ['0000:1b:00', 79, 'fatal'],
      ['0000:43:00', 31, 'ignored'],
      ['0000:43:00', 13, 'ignored'],
    ]);
    expect(events[0]!.text).toBe('pid=0, name=, GPU has fallen off the bus.');
    expect(p.malformed).toBe(0);
  });

  it('takes chunks cut anywhere, even inside a line', () => {
    const text = recorded('fallen-off-bus.log') + recorded('row-remap.log');
    const p = new XidParser();
    const out = [];
    for (let i = 0; i < text.length; i += 7) out.push(...p.push(text.slice(i, i + 7)));
    out.push(...p.end());
    expect(out.map((e) => `${e.code}:${e.verdict}`)).toEqual(['79:fatal', '63:ignored']);
  });

  it('counts garbage that names an Xid, skips other garbage, and never throws', () => {
    const p = new XidParser();
    expect(p.push(recorded('garbage.log'))).toEqual([]);
    expect(p.malformed).toBe(2);
    expect(p.push(`${'x'.repeat(20_000)}`)).toEqual([]);
    expect(p.push(`${'y'.repeat(10)}\n${recorded('unknown-gpu.log')}`).map((e) => e.code)).toEqual([48]);
    expect(p.malformed).toBe(3);
  });

  it("judges each code as NVIDIA's catalogue does: reset-needed ones fatal, a tenant's own faults not held against the card", () => {
    for (const code of [48, 61, 62, 64, 74, 79, 95, 119, 120, 140]) expect(classifyXid(code, '')).toBe('fatal');
    for (const code of [13, 31, 43, 45, 63]) expect(classifyXid(code, '')).toBe('ignored');
    for (const code of [94, 9999]) expect(classifyXid(code, '')).toBe('transient');
    expect(classifyXid(154, 'GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)')).toBe('fatal');
    expect(classifyXid(154, 'GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)')).toBe('ignored');
    expect(classifyXid(154, 'Recovery action: None')).toBe('ignored');
    expect(parseXidLine('NVRM: Xid (0000:01:00): 3, C 00000005 SC 00000007')).toMatchObject({ pciPrefix: '0000:01:00', code: 3 });
  });

  it("follows the operator's policy: a code named in a list leaves the built-in ones", () => {
    // A site that counts its tenants' page faults, trusts its NVLink errors to heal, and wants 154 ignored.
    const policy = xidPolicy({ transient: [31], ignored: [74, 154], fatal: [94] });
    expect(classifyXid(31, '', policy)).toBe('transient');
    expect(classifyXid(74, '', policy)).toBe('ignored');
    expect(classifyXid(94, '', policy)).toBe('fatal');
    expect(classifyXid(154, 'changed from 0x0 (None) to 0x1 (GPU Reset Required)', policy)).toBe('ignored');
    // The rest keeps its default class.
    expect(classifyXid(79, '', policy)).toBe('fatal');
    expect(classifyXid(13, '', policy)).toBe('ignored');
    const p = new XidParser(policy);
    expect(p.push(recorded('app-fault.log')).map((e) => `${e.code}:${e.verdict}`)).toEqual(['31:transient', '13:ignored']);
  });
});
