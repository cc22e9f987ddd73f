import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NvidiaGpuDriver } from '../../drivers/nvidia/index.js';
import type { AcceleratorView } from '../../model/index.js';
import { NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { startStack, type Stack } from '../support/stack.js';
import { SysfsKernel } from '../support/sysfs-kernel.js';

/**
 * Reboots of compute hosts running the vendor drivers on their sysfs fixtures, through the real
 * conductor and agent: the host comes back re-imaged (no agent cache), the kernel has forgotten
 * what the drivers made for the instances, and the conductor has it made again from its records.
 */
const base = '/cyborg/v1';
const vm1 = '2b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e11';
const HOST = 'compute-1';

let s: Stack;
afterEach(async () => {
  await s?.stop();
});

const view = (id: string): AcceleratorView => s.conductor.getAccelerator(id);
const named = (name: string): AcceleratorView => {
  const a = s.conductor.listAccelerators({}).find((x) => x.name === `${HOST}_${name}`);
  if (!a) throw new Error(`no accelerator ${HOST}_${name} in ${s.conductor.listAccelerators({}).map((x) => x.name).join(', ')}`);
  return a;
};

async function attach(a: AcceleratorView, vm: string): Promise<AcceleratorView> {
  expect((await s.app.inject({ method: 'POST', url: `${base}/accelerators/${a.id}/enable`, payload: {} })).statusCode).toBe(200);
  const r = await s.app.inject({ method: 'POST', url: `${base}/instances/${vm}/attach`, payload: { acceleratorId: a.id } });
  expect(r.statusCode, r.body).toBe(200);
  return view(a.id);
}

/** The agent starts again after the host came back; resolves with the conductor's comparison. */
async function rejoin(): Promise<NonNullable<ReturnType<Stack['conductor']['rejoins']['get']>>> {
  const before = s.conductor.rejoins.get(HOST);
  await s.restartAgent();
  const run = s.conductor.rejoins.get(HOST);
  expect(run).toBeDefined();
  expect(run).not.toBe(before);
  return run!;
}

const sysRoot = (name: string): string => join(mkdtempSync(join(tmpdir(), `cyborg-${name}-`)), 'sys');

describe('nvidia_gpu_driver: a host whose vGPU mdev a reboot lost', () => {
  it('gets the mdev of the instance\'s vGPU made again by the conductor, the instance left attached', async () => {
    const root = sysRoot('nvidia-reboot');
    const kernel = new SysfsKernel(root, NVIDIA_HOST);
    let gpu!: NvidiaGpuDriver;
    s = await startStack({
      api: true,
      drivers: (host) => [kernel.drives(gpu = new NvidiaGpuDriver({ host, sysfsRoot: root, vgpuTypes: { 'nvidia-699': ['0000:b1:00.0'] } }))],
    });
    const a16 = await attach(named('0000:b1:00.0'), vm1);
    const handle = a16.allocations[0]!.handleUuid;
    // The handle names the VF whose mdev type makes it (the A16's first VF).
    const parent = '0000:b1:00.4';
    expect(await gpu.mdevExists(parent, handle)).toBe(true);

    kernel.reboot();
    expect(await gpu.mdevExists(parent, handle)).toBe(false);
    const outcome = await rejoin();
    expect(outcome).toMatchObject({ restored: [handle], relaidOut: [], flagged: [] });
    expect(await gpu.mdevExists(parent, handle)).toBe(true);

    expect(view(a16.id)).toMatchObject({ state: 'attached', health: { status: 'ok' }, missing: false, allocations: [{ instanceUuid: vm1, handleUuid: handle }] });
    const history = await s.conductor.history(a16.id);
    expect(history.find((r) => r.event === 'RESTORE')).toMatchObject({ actor: 'conductor', args: { handleUuid: handle, instanceUuid: vm1 } });
  });
});
