import { describe, expect, it } from 'vitest';
import { NAMESPACE_DNS, stableId, uuid3 } from './index.js';

describe('name-based ids', () => {
  it('computes uuid3 as Python does (Cyborg names resource providers with it)', () => {
    // Python: str(uuid.uuid3(uuid.NAMESPACE_DNS, 'python.org'))
    expect(uuid3(NAMESPACE_DNS, 'python.org')).toBe('6fa459ea-ee8a-3ca4-894e-db77e160355e');
  });

  it('keeps the ids it has handed out: the same facts give the same id across versions', () => {
    expect(stableId('host-1', 'cpid', '0000:3b:00.0')).toBe('89c389eb-4b2e-5578-bcd3-f9ceb82ee30a');
    expect(uuid3(NAMESPACE_DNS, 'compute-1_nvidia_gpu_0')).toBe('29a5d9ce-606d-3c2d-8c8b-864f366055f8');
  });
});
