import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NvidiaGpuDriver } from '../../drivers/nvidia/index.js';
import { buildHost, NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * An operator attaches instances by device profile (`cyborg attach-instance --device-profile`):
 * the profile selects accelerators the way Placement selects providers for Nova — every request
 * group, required and forbidden traits, every resources: key, group_policy — through the one
 * matcher (placement-query/). GPUs of the H100 / A10 / A16 host, all passed through as pGPUs.
 */
describe('operator attach by device profile, matched as Placement matches', () => {
  let s: Stack;
  const admin = () => s.conductor.driverAdmin;
  const profile = async (name: string, groups: Record<string, string>[]): Promise<void> => {
    await s.conductor.documents.createProfile({ uuid: randomUUID(), name, description: null, groups, createdAt: new Date().toISOString(), updatedAt: null });
  };

  beforeAll(async () => {
    const root = buildHost(NVIDIA_HOST, 'profile-attach');
    s = await startStack({ hosts: ['gpu-1'], log: quietLogger(), drivers: (host) => [new NvidiaGpuDriver({ host, sysfsRoot: root, filterSriovVfs: true })] });
    for (const a of s.conductor.listAccelerators({})) await s.conductor.act(a.id, { type: 'ENABLE' });
    await profile('not-h100', [{ 'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_2331': 'forbidden', 'trait:CUSTOM_NVIDIA_2236': 'forbidden' }]);
    await profile('two-h100', [
      { 'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_2331': 'required' },
      { 'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_2331': 'required' },
    ]);
    await profile('h100-and-mig', [{ 'resources:PGPU': '1', 'resources:CUSTOM_MIG_1G_10GB': '1' }]);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('never picks a GPU with a trait the profile forbids', async () => {
    const vm = randomUUID();
    const { accelerator } = await admin().attachInstance(vm, { deviceProfileName: 'not-h100' });
    expect(accelerator.name).toBe('gpu-1_0000:b1:00.0');
    await admin().detachInstance(vm);
  });

  it('attaches one accelerator per request group, on two GPUs when group_policy is isolate', async () => {
    const vm = randomUUID();
    const r = await admin().attachInstance(vm, { deviceProfileName: 'two-h100', groupPolicy: 'isolate' });
    expect(r.arqs?.map((a) => [a.state, a.deviceProfileGroupId])).toEqual([
      ['Bound', 0],
      ['Bound', 1],
    ]);
    expect(r.accelerators?.map((a) => a.name).sort()).toEqual(['gpu-1_0000:1b:00.0', 'gpu-1_0000:43:00.0']);
    await admin().detachInstance(vm);
  });

  it('refuses what no single provider has (every resources: key of a group on one provider), binding nothing', async () => {
    const err = await admin()
      .attachInstance(randomUUID(), { deviceProfileName: 'h100-and-mig' })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'accelerator.none_available' });
    expect(s.conductor.listArqs({}).filter((a) => a.state === 'Bound')).toEqual([]);
  });

  it('takes the attach handle an operator names (adopting the one a guest already uses), refusing one held or one without its accelerator', async () => {
    const a16 = s.conductor.listAccelerators({}).find((a) => a.name === 'gpu-1_0000:b1:00.0')!;
    const vm = randomUUID();
    const err = await admin()
      .attachInstance(vm, { handleUuid: 'x' })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'request.invalid', details: { field: 'handleUuid' } });
    const r = await admin()
      .attachInstance(vm, { acceleratorId: a16.id, handleUuid: 'no-such-handle' })
      .catch((e: unknown) => e);
    expect((r as Error).message).toMatch(/has no attach handle no-such-handle/);
    expect(s.conductor.listArqs({ instanceUuid: vm })).toEqual([]);
  });
});
