import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { productNames } from './pci-ids.js';

describe('product names from pci.ids', () => {
  it("reads one vendor's devices, skipping subsystems and other vendors", () => {
    const path = join(mkdtempSync(join(tmpdir(), 'pciids-')), 'pci.ids');
    // The PCI ID Repository's layout (https://pci-ids.ucw.cz), entries as it lists them.
    writeFileSync(
      path,
      '# comment\n1002  Advanced Micro Devices, Inc. [AMD/ATI]\n\t2331  not NVIDIA\n10de  NVIDIA Corporation\n\t20f1  GA100 [A100 PCIe 40GB]\n\t\t10de 145f  A100 PCIe 40GB\n\t2331  GH100 [H100 PCIe]\n10df  Emulex Corporation\n\t2331  not NVIDIA either\n',
    );
    expect([...productNames(path, '10DE')]).toEqual([
      ['20f1', 'GA100 [A100 PCIe 40GB]'],
      ['2331', 'GH100 [H100 PCIe]'],
    ]);
  });

  it('gives nothing for a missing file, never an error', () => {
    expect(productNames('/nonexistent/pci.ids', '10de').size).toBe(0);
    expect(productNames(undefined, '10de').size).toBe(0);
  });
});
