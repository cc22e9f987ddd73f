import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';

let rt: Stack | undefined;
afterEach(async () => {
  await rt?.stop();
  rt = undefined;
});

/**
 * An attach that lands after its ARQ is gone (the agent finished it late, after the bind had
 * failed and Nova deleted the ARQ) leaves a device taken by nobody. The conductor's sweep finds
 * the handle, asks the ARQ home, and releases it once it is still orphaned past the grace;
 * handles of live ARQs are never touched.
 */
describe('an attach handle held for an ARQ that is gone', () => {
  it('is released by the conductor, audited as its own act, while a bound ARQ keeps its device', async () => {
    rt = await startStack({ fake: { gpus: 1 }, reconcile: { reconcileEveryMs: 100, orphanGraceMs: 300 } });
    const c = rt.conductor;
    const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
    const gpu = c.listAccelerators({ type: 'GPU' })[0]!;
    await c.act(fpga.id, { type: 'ENABLE' });
    await c.act(gpu.id, { type: 'ENABLE' });
    const live = await c.createArq({ deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' });
    expect((await c.bindArq(live.uuid, { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: 'vm-live' })).state).toBe('Bound');

    // The late attach, as the binder sends it, for an ARQ nobody has any more.
    const gone = randomUUID();
    const handleUuid = c.tree.acceleratorActor(gpu.id).freeHandle()!;
    await c.act(gpu.id, { type: 'ATTACH', handleUuid, instanceUuid: 'vm-late', arqUuid: gone });
    expect(c.getAccelerator(gpu.id)).toMatchObject({ state: 'attached', allocations: [{ arqUuid: gone }] });

    await eventually(() => c.getAccelerator(gpu.id)?.allocations.length === 0, { what: 'the orphaned handle released', timeoutMs: 5_000 });
    expect(c.getAccelerator(gpu.id)).toMatchObject({ state: 'ready' });
    const detach = (await c.history(gpu.id)).find((r) => r.event === 'DETACH');
    expect(detach).toMatchObject({ actor: 'conductor', from: 'attached' });

    // Several sweeps later the live ARQ still holds its FPGA.
    await new Promise((r) => setTimeout(r, 800));
    expect(c.getAccelerator(fpga.id)).toMatchObject({ state: 'attached', allocations: [{ arqUuid: live.uuid }] });
    expect(c.getArq(live.uuid)).toMatchObject({ state: 'Bound' });
  });
});
