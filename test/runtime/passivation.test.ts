import { afterEach, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../support/stack.js';
import { eventually } from '../support/eventually.js';

let rt: Stack | undefined;
afterEach(async () => {
  await rt?.stop();
  rt = undefined;
});

describe('accelerators at rest (passivation), as an operator sees them', () => {
  it("discovers a host's accelerators without starting a machine for any of them", async () => {
    rt = await startStack({ fake: { gpus: 8, nics: 1, vfsPerNic: 4 } });
    expect(rt.conductor.listAccelerators().length).toBeGreaterThan(10);
    expect(rt.conductor.tree.passivation.awakeCount).toBe(0);
    // Reads are answered from the record: state, tags and allowed events as the machine would give them.
    const gpu = rt.conductor.listAccelerators({ type: 'GPU' })[0]!;
    expect(gpu).toMatchObject({ state: 'inactive', allowed: ['ENABLE', 'REMOVE'] });
    expect(rt.conductor.tree.passivation.awakeCount).toBe(0);
  });

  it('puts an idle accelerator to rest and wakes it on the next event with its state, allocations and history intact', async () => {
    rt = await startStack({ restAfterMs: 50 });
    const c = rt.conductor;
    const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
    await c.act(fpga.id, { type: 'ENABLE' });
    await c.act(fpga.id, { type: 'PROGRAM', bitstreamId: 'bs-1' });
    await c.attach(fpga.id, { instanceUuid: 'vm-1' });
    expect(c.tree.passivation.awakeCount).toBe(1);
    await eventually(() => c.tree.passivation.awakeCount === 0, { what: 'the FPGA to rest', timeoutMs: 5_000 });

    const resting = c.getAccelerator(fpga.id);
    expect(resting).toMatchObject({ state: 'attached', program: { bitstreamId: 'bs-1' }, tags: expect.arrayContaining(['in-use']) });
    expect(resting.allocations).toEqual([expect.objectContaining({ instanceUuid: 'vm-1' })]);
    expect(resting.allowed).toEqual(expect.arrayContaining(['ATTACH', 'DETACH']));

    // The next event wakes it from the record: a second instance, then both detach.
    await c.attach(fpga.id, { instanceUuid: 'vm-2' });
    expect(c.getAccelerator(fpga.id).allocations).toHaveLength(2);
    await c.detach(fpga.id, { instanceUuid: 'vm-1' });
    expect((await c.detach(fpga.id, { instanceUuid: 'vm-2' })).state).toBe('programmed');
    const log = await c.history(fpga.id);
    expect(log.map((t) => `${t.from}>${t.to}`)).toEqual([
      'none>inactive',
      'inactive>installing',
      'installing>ready',
      'ready>programming',
      'programming>programmed',
      'programmed>attaching',
      'attaching>attached',
      'attached>attaching',
      'attaching>attached',
      'attached>detaching',
      'detaching>attached',
      'attached>detaching',
      'detaching>programmed',
    ]);
  });

  it('never puts to rest an accelerator whose driver operation is still running', async () => {
    rt = await startStack({ restAfterMs: 20 });
    rt.fakes[0]!.slowDown('install', 300);
    const c = rt.conductor;
    const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
    const enabling = c.act(fpga.id, { type: 'ENABLE' });
    await eventually(() => c.getAccelerator(fpga.id).state === 'installing', { what: 'the install to start', timeoutMs: 5_000 });
    // A sweep as if the accelerator had been idle for a minute: it is mid-operation, so it stays awake.
    c.tree.passivation.sweep(Date.now() + 60_000);
    expect(c.tree.passivation.awakeCount).toBe(1);
    expect(c.getAccelerator(fpga.id).state).toBe('installing');
    expect((await enabling).state).toBe('ready');
    await eventually(() => c.tree.passivation.awakeCount === 0, { what: 'the FPGA to rest after the install', timeoutMs: 5_000 });
    expect(c.getAccelerator(fpga.id).state).toBe('ready');
  });

  it("takes a lost host's accelerators offline and back even while they are at rest", async () => {
    rt = await startStack({ restAfterMs: 20, fake: { gpus: 2, nics: 0 } });
    const c = rt.conductor;
    const gpus = c.listAccelerators({ type: 'GPU' });
    await c.act(gpus[0]!.id, { type: 'ENABLE' });
    await eventually(() => c.tree.passivation.awakeCount === 0, { what: 'the GPUs to rest', timeoutMs: 5_000 });
    c.hosts.get('compute-1')!.broadcast({ type: 'HOST_LOST' });
    await eventually(() => c.listAccelerators({ type: 'GPU' }).every((g) => g.state === 'offline'), { what: 'the GPUs offline', timeoutMs: 5_000 });
    c.hosts.get('compute-1')!.broadcast({ type: 'HOST_BACK' });
    await eventually(() => c.getAccelerator(gpus[0]!.id).state === 'ready' && c.getAccelerator(gpus[1]!.id).state === 'inactive', {
      what: 'the GPUs back where they were',
      timeoutMs: 5_000,
    });
  });
});
