import { describe, expect, it } from 'vitest';
import { MemoryJournal, type Change, type CommitOptions } from '../../actors/runtime/index.js';
import { eventually } from '../support/eventually.js';
import { useStack } from '../support/stack.js';

const stacks = useStack();

/** A journal that holds an ARQ's removal while `held` is set, as a loaded database does. */
class HeldJournal extends MemoryJournal {
  held: Promise<void> | undefined;
  waiting = 0;
  override async commit(changes: Change[], opts?: CommitOptions): Promise<void> {
    if (this.held && changes.some((ch) => ch.type === 'arq' && ch.deleted)) {
      this.waiting++;
      await this.held;
    }
    return super.commit(changes, opts);
  }
}

/**
 * Found by the rolling-upgrade story on a loaded machine: a conductor stopping gracefully drains
 * its ARQs, and an ARQ whose delete had reached its final state while the commit was still on its
 * way (its actor done, not yet forgotten) made the drain's wait throw inside XState's subscribe —
 * an uncaught error that killed the conductor in the middle of its stop.
 */
describe('a graceful stop while a delete is being committed', () => {
  it('drains and stops; the delete is written', async () => {
    const journal = new HeldJournal();
    const rt = await stacks.start({ journal });
    const c = rt.conductor;
    const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
    await c.act(fpga.id, { type: 'ENABLE' });
    const arq = await c.createArq({ deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' });
    expect((await c.bindArq(arq.uuid, { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: 'vm-1' })).state).toBe('Bound');

    let release!: () => void;
    journal.held = new Promise((r) => (release = r));
    const deleted = c.deleteArq(arq.uuid);
    await eventually(() => journal.waiting > 0, { what: 'the removal committing' });
    const stopped = c.stop(2_000);
    setTimeout(() => release(), 200);
    await stopped;
    await deleted.catch(() => undefined);
    expect(journal.arqs.has(arq.uuid)).toBe(false);
  });
});
