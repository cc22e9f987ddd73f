import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeDriver } from './index.js';

describe("the fake driver's usage, for demos", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('idles while free, works while attached, and moves with the clock', async () => {
    const fake = new FakeDriver({ host: 'demo', gpus: 1, nics: 1, vfsPerNic: 1 });
    const [fpga, gpu, nic] = await fake.discover();
    const gpuDep = gpu!.deployables[0]!;
    const of = async (uuid: string) => (await fake.usage()).find((u) => u.deployableUuid === uuid)!;

    vi.useFakeTimers({ now: Date.parse('2026-11-24T10:00:00Z') });
    const idle = await of(gpuDep.uuid);
    expect(idle.utilization).toBeLessThan(0.07);
    expect(idle.memoryTotalBytes).toBe(16 * 1024 ** 3);

    await fake.prepareAttach({ key: 'k1', deployable: gpuDep, params: {} });
    const busy = await of(gpuDep.uuid);
    expect(busy.utilization).toBeGreaterThan(0.45);
    expect(busy.memoryUsedBytes!).toBeGreaterThan(idle.memoryUsedBytes!);
    expect(busy.powerW!).toBeGreaterThan(idle.powerW!);
    expect(busy.temperatureC!).toBeGreaterThan(idle.temperatureC!);
    vi.setSystemTime(Date.now() + 20_000);
    expect((await of(gpuDep.uuid)).utilization).not.toBe(busy.utilization);

    await fake.releaseAttach({ key: 'k2', deployable: gpuDep, params: {} });
    expect((await of(gpuDep.uuid)).utilization).toBeLessThan(0.07);

    // The FPGA has memory, temperature and power; a NIC's VF measures only how busy it is.
    expect(Object.keys(await of(fpga!.deployables[0]!.uuid)).sort()).toEqual([
      'deployableUuid',
      'memoryTotalBytes',
      'memoryUsedBytes',
      'powerW',
      'temperatureC',
      'utilization',
    ]);
    expect(Object.keys(await of(nic!.deployables[0]!.uuid)).sort()).toEqual(['deployableUuid', 'utilization']);
  });

  it('says nothing of a device that was unplugged', async () => {
    const fake = new FakeDriver({ host: 'demo', gpus: 1 });
    const [, gpu] = await fake.discover();
    fake.unplug(gpu!.uuid);
    expect((await fake.usage()).map((u) => u.deployableUuid)).not.toContain(gpu!.deployables[0]!.uuid);
  });
});
