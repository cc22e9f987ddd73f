import { describe, expect, it } from 'vitest';
import { driverFor } from './ids.js';
import { revisionOf } from './revisions.js';

describe("Cyborg's alembic revisions", () => {
  it('adopts 9.0.0 and master, refuses older and unknown ones naming why', () => {
    expect(revisionOf('4cc1d79978fc')).toMatchObject({ ok: true, value: { hasDeviceStatus: false } });
    expect(revisionOf('6c77bd6afea5')).toMatchObject({ ok: true, value: { hasDeviceStatus: true } });
    expect(revisionOf('899cead40bc9')).toMatchObject({ ok: false, why: expect.stringMatching(/older than Cyborg 9\.0\.0/) });
    expect(revisionOf('0123456789ab')).toMatchObject({ ok: false, why: expect.stringMatching(/newer than any Cyborg revision/) });
  });

  it("maps Cyborg's deployable driver names onto ours by device type", () => {
    expect(driverFor('fake', 'FPGA')).toBe('fake');
    expect(driverFor('intel', 'NIC')).toBe('intel_nic_driver');
    expect(driverFor('XILINX', 'FPGA')).toBe('xilinx_fpga_driver');
    expect(driverFor('NVIDIA', 'GPU')).toBe('nvidia_gpu_driver');
    expect(driverFor('huawei', 'AICHIP')).toBeUndefined();
  });
});
