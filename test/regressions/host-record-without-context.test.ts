/**
 * Issue 25 (found when machine records became typed): a host whose inventory was stored but
 * whose host row never was (db/load.ts gives it back as `online` with an empty context: db/
 * imports no machine) came back from a restart with no epoch and no agent id — undefined where the
 * host view promises a number and a null. Its record is now completed from a fresh context.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Conductor } from '../../actors/conductor/index.js';
import { MemoryJournal } from '../../actors/runtime/index.js';
import type { HostContext } from '../../machines/index.js';
import { captureLogger } from '../support/log.js';
import { fastTiming, type Stack, startStack } from '../support/stack.js';

let rt: Stack | undefined;
let again: Conductor | undefined;
afterEach(async () => {
  await again?.stop();
  await rt?.stop();
  rt = undefined;
  again = undefined;
});

describe('a host read back without its row', () => {
  it('comes back with the context a fresh host has: no agent yet, epoch 0', async () => {
    const journal = new MemoryJournal();
    rt = await startStack({ journal });
    await rt.conductor.stop();
    const stored = journal.hosts.get('compute-1')!;
    journal.hosts.set('compute-1', { ...stored, record: { value: 'online', context: {} as HostContext } });

    again = new Conductor({ bus: rt.bus, journal, log: captureLogger().log, timing: fastTiming });
    await again.start();
    expect(again.getHost('compute-1')).toMatchObject({ name: 'compute-1', agentId: null, epoch: 0 });
  });
});
