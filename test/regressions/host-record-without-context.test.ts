/**
 * Issue 25 (found when machine records became typed): a host whose inventory was stored but
 * whose host row never was (db/load.ts gives it back as `online` with an empty context: db/
 * imports no machine) came back from a restart with no epoch and no agent id — undefined where the
 * host view promises a number and a null. Its record is now completed from a fresh context.
 */
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import type { HostContext } from '../../machines/index.js';
import { useStack } from '../support/stack.js';

const stacks = useStack();

describe('a host read back without its row', () => {
  it('comes back with the context a fresh host has: no agent yet, epoch 0', async () => {
    const journal = new MemoryJournal();
    const rt = await stacks.start({ journal });
    await rt.conductor.stop();
    const stored = journal.hosts.get('compute-1')!;
    journal.hosts.set('compute-1', { ...stored, record: { value: 'online', context: {} as HostContext } });

    const again = await stacks.restartOn(journal);
    expect(again.getHost('compute-1')).toMatchObject({ name: 'compute-1', agentId: null, epoch: 0 });
  });
});
