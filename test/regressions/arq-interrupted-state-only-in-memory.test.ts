/**
 * Issue 25: an ARQ a conductor's crash left in an effect state (`BindStarted`, `Unbinding`,
 * `Deleting`) came back where INTERRUPTED takes it (`BindFailed`, …) in memory only: the database
 * still said `BindStarted`, so the api's view (`BindFailed`) and the database disagreed until the
 * ARQ's next transition (test/faults/conductor-kill.test.ts's view-equals-database check caught it
 * under load). An interrupted accelerator already committed its RECOVER; now an ARQ does too.
 */
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { eventually } from '../support/eventually.js';
import { useStack } from '../support/stack.js';

const stacks = useStack();

describe('an ARQ a crash left mid-effect', () => {
  // BindStarted alone: the other two come back in states reconciliation moves on from at once.
  it.each([['BindStarted', 'BindFailed']])(
    'saved in %s: the restart commits %s, with a RECOVER in its log, so the database says what the view says',
    async (saved, recovered) => {
      const journal = new MemoryJournal();
      const rt = await stacks.start({ journal });
      const arq = await rt.conductor.createArq({ deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' });
      const row = journal.arqs.get(arq.uuid)!;
      journal.arqs.set(arq.uuid, { uuid: arq.uuid, record: { value: saved, context: row.record.context } });
      await rt.conductor.stop();
      const again = await stacks.restartOn(journal);
      await eventually(() => journal.arqs.get(arq.uuid)?.record.value === recovered, { what: `${recovered} in the database` });

      expect(again.getArq(arq.uuid).state).toBe(recovered);
      expect(journal.arqs.get(arq.uuid)?.record.value).toBe(recovered);
      expect((await again.history(arq.uuid)).at(-1)).toMatchObject({ event: 'RECOVER', from: saved, to: recovered, reason: 'interrupted' });
    },
  );
});
