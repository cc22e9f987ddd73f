import { afterEach, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../support/stack.js';

let rt: Stack | undefined;
afterEach(async () => {
  await rt?.stop();
  rt = undefined;
});

/** The side of a cross-conductor bind that runs where the accelerator is (see arq-home.ts). */
describe("binds run for another conductor's ARQ home", () => {
  it('attaches and releases a handle for an ARQ this conductor does not hold, each committed', async () => {
    rt = await startStack();
    const c = rt.conductor;
    const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
    await c.act(fpga.id, { type: 'ENABLE' });
    const bound = await c.rooms.arqs.attachFor('arq-elsewhere', { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: 'vm-1', projectId: null });
    expect(bound).toMatchObject({ acceleratorId: fpga.id });
    expect(c.getAccelerator(fpga.id).allocations).toEqual([expect.objectContaining({ arqUuid: 'arq-elsewhere', handleUuid: bound.handleUuid })]);
    expect(c.arqs.size).toBe(0);

    // Found by the accelerators when the home lost track of the handle (an interrupted bind).
    expect(await c.rooms.arqs.releaseFor('arq-elsewhere', null)).toBe(true);
    expect(c.getAccelerator(fpga.id).allocations).toEqual([]);
  });

  it("has nothing to release for an accelerator that is not here, and says so as the host's holder", async () => {
    rt = await startStack();
    const gone = { acceleratorId: 'no-such-accelerator', handleUuid: 'h-1' };
    expect(await rt.conductor.rooms.arqs.releaseFor('arq-1', gone)).toBe(false);
    expect(await rt.conductor.rooms.arqs.releaseFor('arq-1', gone, true)).toBe(true);
  });
});
