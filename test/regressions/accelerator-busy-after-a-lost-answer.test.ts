/**
 * Issue 25 (found by test/faults/database-outage.test.ts, which once timed out on "no handle held
 * for a gone ARQ"): PostgreSQL went away while an accelerator detached. Its `detaching` was in a
 * flush whose COMMIT went out before the connection broke, so the journal could not answer it;
 * its `ready`, queued behind, was answered 503, and memory went back to `attached`. When the
 * database came back and showed `detaching` committed, memory took that record as it was: a busy
 * state with no driver operation running, which refuses DETACH for good. The ARQ was gone, the
 * handle stayed held in memory and in the database, and neither the orphan sweep nor a delete's
 * retry could release it. A committed record taken after a revert now comes back as a restart
 * brings it back (INTERRUPTED: `error`, the detach to retry), with its RECOVER committed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryJournal, type Change, type CommitOptions } from '../../actors/runtime/index.js';
import { CyborgError } from '../../errors/index.js';
import { eventually } from '../support/eventually.js';
import { type Stack, startStack } from '../support/stack.js';

/**
 * The database's side of the outage, scripted: once `armed`, an accelerator's `detaching` is
 * written only on `release()` (its answer lost meanwhile), and the accelerator's next change is
 * answered 503, before it — as the PostgreSQL journal answers a commit it dropped while an
 * earlier flush's outcome is still open.
 */
class LostAnswerJournal extends MemoryJournal {
  armed = false;
  private refuseNext = false;
  private held: (() => void) | undefined;

  override commit(changes: Change[], opts?: CommitOptions): Promise<void> {
    const acc = changes.find((c) => c.type === 'accelerator');
    if (this.armed && acc?.record.value === 'detaching') {
      this.armed = false;
      this.refuseNext = true;
      return new Promise((resolve, reject) => {
        this.held = () => void super.commit(changes, opts).then(resolve, reject);
      });
    }
    if (this.refuseNext && acc) {
      this.refuseNext = false;
      return Promise.reject(new CyborgError('persistence.unavailable', 'the database has been unreachable; the change was not made', {}));
    }
    return super.commit(changes, opts);
  }

  /** The database is back: the held flush turns out to have committed. */
  release(): void {
    this.held?.();
  }
}

let rt: Stack | undefined;
afterEach(async () => {
  await rt?.stop();
  rt = undefined;
});

describe('an accelerator whose detach was committed while the answer was lost', () => {
  it('is not left busy: it comes back as after a restart, and the handle of the gone ARQ is released', async () => {
    const journal = new LostAnswerJournal();
    rt = await startStack({ journal, reconcile: { reconcileEveryMs: 50, orphanGraceMs: 100 } });
    const c = rt.conductor;
    const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
    await c.act(fpga.id, { type: 'ENABLE' });
    const arq = await c.createArq({ deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' });
    expect((await c.bindArq(arq.uuid, { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: 'vm-1' })).state).toBe('Bound');

    journal.armed = true;
    await c.deleteArq(arq.uuid).catch(() => undefined);
    journal.release();

    const stored = () => journal.accelerators.get(fpga.id)!.record;
    await eventually(
      () => {
        const r = stored();
        if (r.value !== 'ready' || r.context.allocations.length > 0) throw new Error(`${r.value}, ${r.context.allocations.length} held`);
        return true;
      },
      { what: 'the accelerator free in the database', timeoutMs: 10_000 },
    );
    await eventually(() => c.getAccelerator(fpga.id).state === 'ready', { what: 'the accelerator free in memory', timeoutMs: 5_000 });
    expect(c.getAccelerator(fpga.id).allocations).toEqual([]);
    expect(journal.arqs.has(arq.uuid)).toBe(false);
    // The way through: the committed `detaching` recovered as a restart recovers it, then the detach retried.
    const log = (await c.history(fpga.id)).map((t) => `${t.event} ${t.from}->${t.to}`);
    expect(log).toContain('RECOVER detaching->error');
  });
});
