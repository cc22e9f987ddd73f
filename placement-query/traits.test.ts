import { describe, expect, it } from 'vitest';
import { canonicalFunctionId, functionTrait } from './index.js';

describe('one spelling per function trait', () => {
  it('writes an AFU id the same whether sysfs, a profile or Glance gave it', () => {
    const spellings = [
      'd8424dc4a4a3c413f89e433683f9040b',
      'D8424DC4-A4A3-C413-F89E-433683F9040B',
      '{d8424dc4-a4a3-c413-f89e-433683f9040b}',
      '0xd8424dc4a4a3c413f89e433683f9040b',
    ];
    expect(new Set(spellings.map((s) => functionTrait('INTEL', s)))).toEqual(new Set(['CUSTOM_FPGA_FUNCTION_ID_INTEL_D8424DC4A4A3C413F89E433683F9040B']));
  });

  it('keeps other ids readable: upper case, refused characters as _', () => {
    expect(canonicalFunctionId('gzip-v1')).toBe('GZIP_V1');
    expect(functionTrait('intel', '9e6b-4f.x')).toBe('CUSTOM_FPGA_FUNCTION_ID_INTEL_9E6B_4F_X');
    // Not a GUID: 31 digits stay as written.
    expect(canonicalFunctionId('d8424dc4-a4a3-c413-f89e-433683f9040')).toBe('D8424DC4_A4A3_C413_F89E_433683F9040');
  });
});
