/**
 * Issue 39: `[pci] passthrough_whitelist` written on several lines, one entry per line as Cyborg
 * takes it (its MultiStrOpt: given several times, or continued on indented lines), kept only the
 * last line, with no warning. Now every line is an entry, and a line that does not parse is named.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { AllowList } from '../../drivers/generic/allow-list.js';

const conf = (text: string): string => {
  const path = join(mkdtempSync(join(tmpdir(), 'cyborg-wl-')), 'cyborg.conf');
  writeFileSync(path, text);
  return path;
};
const fn = (vendorId: string, productId: string) => ({ address: '0000:3b:00.0', vendorId, productId, netdevs: [] });

describe('a multi-line passthrough_whitelist', () => {
  it('keeps every entry, given twice or continued on an indented line', () => {
    for (const text of [
      '[pci]\npassthrough_whitelist = {"vendor_id": "10de", "product_id": "20b5"}\npassthrough_whitelist = {"vendor_id": "8086", "product_id": "0d5c"}\n',
      '[pci]\npassthrough_whitelist = {"vendor_id": "10de", "product_id": "20b5"}\n  {"vendor_id": "8086", "product_id": "0d5c"}\n',
    ]) {
      const config = loadConfig({}, {}, { configFiles: [conf(text)] });
      const list = AllowList.fromJson(config.generic.passthroughWhitelist)!;
      expect(list.match(fn('10de', '20b5'))).toBeDefined();
      expect(list.match(fn('8086', '0d5c'))).toBeDefined();
    }
  });

  it('names the line that does not parse', () => {
    expect(() => AllowList.fromJson('{"vendor_id": "10de"}\n{"vendor_id": 8086')).toThrow(/passthrough whitelist line 2 is not JSON/);
  });
});
