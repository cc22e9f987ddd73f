import { describe, expect, it } from 'vitest';
import type { Conductor } from '../../actors/conductor/index.js';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { isDeleting } from '../../machines/index.js';
import { useStack } from '../support/stack.js';

const stacks = useStack();

/**
 * What Nova's `?instance=` query must answer, computed the slow way: a walk of every ARQ. The
 * conductor answers it from an index; the two must agree after every step.
 */
function byWalk(c: Conductor, instance: string): string[] {
  return c
    .listArqs()
    .filter((a) => a.binding?.instanceUuid === instance && !isDeleting(a.state))
    .map((a) => a.uuid)
    .sort();
}

function byQuery(c: Conductor, instance: string): string[] {
  return c
    .listArqs({ instanceUuid: instance })
    .map((a) => a.uuid)
    .sort();
}

const INSTANCES = ['vm-1', 'vm-2', 'vm-3'];

describe("Nova's ARQs of an instance, from the index", () => {
  it('follow binds, unbinds, rebinds to another instance, deletes and a conductor restart', async () => {
    const journal = new MemoryJournal();
    const rt = await stacks.start({ journal });
    const c = rt.conductor;
    const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
    await c.act(fpga.id, { type: 'ENABLE' });
    const create = async (): Promise<string> => (await c.createArq({ deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' })).uuid;
    const [a, b, d] = [await create(), await create(), await create()];
    const bind = (conductor: Conductor, uuid: string, instance: string) =>
      conductor.bindArq(uuid, { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: instance });
    const agree = (conductor: Conductor, expected: Record<string, string[]>): void => {
      for (const i of INSTANCES) {
        expect(byQuery(conductor, i), i).toEqual(byWalk(conductor, i));
        expect(byQuery(conductor, i), i).toEqual((expected[i] ?? []).sort());
      }
    };

    agree(c, {});
    expect((await bind(c, a, 'vm-1')).state).toBe('Bound');
    expect((await bind(c, b, 'vm-1')).state).toBe('Bound');
    expect((await bind(c, d, 'vm-2')).state).toBe('Bound');
    agree(c, { 'vm-1': [a, b], 'vm-2': [d] });

    // Nova's PATCH remove: b is unbound, its instance has it no more.
    expect((await c.unbindArq(b)).state).toBe('Unbound');
    agree(c, { 'vm-1': [a], 'vm-2': [d] });

    // Bound again, to another instance.
    expect((await bind(c, b, 'vm-3')).state).toBe('Bound');
    agree(c, { 'vm-1': [a], 'vm-2': [d], 'vm-3': [b] });

    // Deleted: gone from its instance as soon as the delete is answered.
    await c.deleteArq(d);
    agree(c, { 'vm-1': [a], 'vm-3': [b] });

    // A new conductor rebuilt from the journal answers the same.
    await c.stop();
    const again = await stacks.restartOn(journal);
    agree(again, { 'vm-1': [a], 'vm-3': [b] });
  });
});
