import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { eventually } from '../support/eventually.js';
import { useStack } from '../support/stack.js';

const stacks = useStack();

/** An enabled FPGA with one ARQ bound to it for instance vm-1. */
async function boundArq(journal = new MemoryJournal()) {
  const rt = await stacks.start({ journal });
  const c = rt.conductor;
  const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
  await c.act(fpga.id, { type: 'ENABLE' });
  const arq = await c.createArq({ deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' });
  expect((await c.bindArq(arq.uuid, { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: 'vm-1' })).state).toBe('Bound');
  return { rt, c, fpga, arq, journal };
}

/**
 * A DELETE of ARQs is an acknowledgement: once answered, the delete happens — now if it can,
 * later if the agent is away or the conductor dies in between. The accelerator gets its handle
 * back; it never stays in `error` holding an allocation whose ARQ is gone.
 */
describe('an acknowledged ARQ delete', () => {
  it('with the agent away: answered with the committed intent, finished when the agent is back', async () => {
    const { rt, c, fpga, arq, journal } = await boundArq();
    await rt.agents[0]!.stop();

    const answered = await c.deleteArq(arq.uuid);
    expect(answered).toMatchObject({ uuid: arq.uuid, cyborgState: 'Deleting' });
    expect(journal.arqs.get(arq.uuid)?.record.value).toMatch(/^Delet/);
    // Nova's list by instance no longer shows it: the instance may be given new ARQs.
    expect(c.listArqs({ instanceUuid: 'vm-1' })).toEqual([]);
    expect(c.getArq(arq.uuid).cyborgState).toBe('Deleting');

    // The detach runs out of time: the delete waits, the accelerator says why it is stuck.
    await eventually(() => c.getArq(arq.uuid).state === 'DeletePending', { what: 'the release to give up for now', timeoutMs: 15_000 });
    expect(c.getAccelerator(fpga.id)).toMatchObject({ state: 'error', allocations: [{ arqUuid: arq.uuid }] });

    await rt.restartAgent(0);
    await eventually(() => !c.arqs.has(arq.uuid), { what: 'the ARQ gone once the agent is back', timeoutMs: 15_000 });
    expect(journal.arqs.has(arq.uuid)).toBe(false);
    expect(c.getAccelerator(fpga.id)).toMatchObject({ state: 'ready', allocations: [] });
    expect(() => c.getArq(arq.uuid)).toThrow(/not found/i);
  });

  it('interrupted by a conductor crash: the next conductor finds it Deleting and finishes it', async () => {
    const { rt, c, fpga, arq, journal } = await boundArq();
    await rt.agents[0]!.stop();
    expect((await c.deleteArq(arq.uuid)).cyborgState).toBe('Deleting');
    expect(journal.arqs.get(arq.uuid)?.record.value).toBe('Deleting');
    await c.stop();

    const again = await stacks.restartOn(journal);
    await rt.restartAgent(0);
    await eventually(() => !again.arqs.has(arq.uuid), { what: 'the interrupted delete finished', timeoutMs: 15_000 });
    expect(journal.arqs.has(arq.uuid)).toBe(false);
    await eventually(() => again.getAccelerator(fpga.id).allocations.length === 0, { what: 'the handle released' });
    expect(again.getAccelerator(fpga.id).state).toBe('ready');
  });

  it('an unbind (PATCH remove) that could not finish is retried until the handle is released', async () => {
    const { rt, c, fpga, arq } = await boundArq();
    await rt.agents[0]!.stop();
    await c.unbindArq(arq.uuid);
    await eventually(() => c.getArq(arq.uuid).state === 'UnbindFailed', { what: 'the unbind to give up for now', timeoutMs: 15_000 });

    await rt.restartAgent(0);
    await eventually(() => c.getArq(arq.uuid).state === 'Unbound', { what: 'the unbind finished once the agent is back', timeoutMs: 15_000 });
    expect(c.getAccelerator(fpga.id)).toMatchObject({ state: 'ready', allocations: [] });
  });
});
