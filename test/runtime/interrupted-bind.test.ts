import { describe, expect, it } from 'vitest';
import type { Conductor } from '../../actors/conductor/index.js';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { useStack } from '../support/stack.js';

const stacks = useStack();

/** Binds an FPGA's ARQ, then "crashes": the accelerator's attach reached the database, the ARQ's Bound did not. */
async function crashMidBind(): Promise<{ fpga: { id: string }; arq: { uuid: string }; again: Conductor }> {
  const journal = new MemoryJournal();
  const rt = await stacks.start({ journal });
  const c = rt.conductor;
  const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
  await c.act(fpga.id, { type: 'ENABLE' });
  const arq = await c.createArq({ deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' });
  expect((await c.bindArq(arq.uuid, { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: 'vm-1' })).state).toBe('Bound');
  const saved = journal.arqs.get(arq.uuid)!;
  journal.arqs.set(arq.uuid, { uuid: arq.uuid, record: { value: 'BindStarted', context: { ...saved.record.context, boundTo: null } } });
  await c.stop();
  const again = await stacks.restartOn(journal);
  return { fpga, arq, again };
}

describe('a bind interrupted by a conductor crash', () => {
  it('comes back BindFailed, and deleting the ARQ (as Nova does) releases the handle the accelerator took', async () => {
    const { fpga, arq, again: back } = await crashMidBind();

    expect(back.getArq(arq.uuid)).toMatchObject({ state: 'BindFailed', error: 'interrupted' });
    expect(back.getAccelerator(fpga.id)).toMatchObject({ state: 'attached', allocations: [{ arqUuid: arq.uuid }] });
    expect((await back.deleteArq(arq.uuid)).state).toBe('Deleted');
    expect(back.getAccelerator(fpga.id)).toMatchObject({ state: 'ready', allocations: [] });
  });

  it('comes back BindFailed, and unbinding the ARQ (PATCH remove) releases the handle too', async () => {
    const { fpga, arq, again: back } = await crashMidBind();

    expect(back.getArq(arq.uuid)).toMatchObject({ state: 'BindFailed' });
    expect((await back.unbindArq(arq.uuid)).state).toBe('Unbound');
    expect(back.getAccelerator(fpga.id)).toMatchObject({ state: 'ready', allocations: [] });
  });
});
