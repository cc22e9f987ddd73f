import { afterEach, describe, expect, it } from 'vitest';
import { FakeDriver } from '../../drivers/fake/index.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';
import { deleteTree, readProvider, uniqueHost } from './harness.js';

/**
 * A compute host reboots and comes back changed: one GPU was pulled during the maintenance
 * window, another reports other traits (its firmware was updated, another function programmed
 * out of band). Placement must not keep the pulled card's provider, nor the changed card's old
 * traits — the failures of Cyborg's bugs 1928174 and 2139369 — and must not wait for the next
 * full pass to drop them (here an hour away). Against the real Placement; skipped without one.
 */
let s: Stack | undefined;
let host = '';
afterEach(async () => {
  if (!s) return;
  await s.stop();
  await deleteTree(s.placement, host);
  s = undefined;
});

describe.skipIf(!svc.placement)('Placement after a host re-joins changed', () => {
  it('deletes the provider of a card the host no longer reports and drops the old traits of one reported with new ones, at once', async () => {
    host = uniqueHost('rj');
    let nextBoot: (d: FakeDriver) => void = () => undefined;
    s = await startStack({
      hosts: [host],
      api: true,
      drivers: (h) => {
        const d = new FakeDriver({ host: h, gpus: 2, nics: 0 });
        nextBoot(d);
        return [d];
      },
      placement: { url: svc.placement!, createRoots: true, intervalMs: 3_600_000 },
    });
    const stack = s;
    const [kept, pulled] = stack.conductor.listAccelerators({ type: 'GPU' }).sort((a, b) => a.name.localeCompare(b.name));
    // The first full pass runs at start; then only changes move Placement.
    const traitsOf = async (rpUuid: string): Promise<string | undefined> => (await readProvider(stack.placement, rpUuid))?.traits.join();
    await eventually(
      async () => (await traitsOf(pulled!.rpUuid)) === 'CUSTOM_FAKE_GPU,OWNER_CYBORG' && (await traitsOf(kept!.rpUuid)) === 'CUSTOM_FAKE_GPU,OWNER_CYBORG',
      { what: 'both GPUs in Placement with their traits', timeoutMs: 20_000 },
    );

    nextBoot = (d) => {
      d.unplug(pulled!.deviceUuid);
      d.retrait(kept!.id, ['CUSTOM_FAKE_GPU_V2']);
    };
    await stack.restartAgent();
    expect(stack.conductor.getAccelerator(pulled!.id).state).toBe('removed');
    await eventually(async () => (await readProvider(stack.placement, pulled!.rpUuid)) === null, {
      what: "the pulled GPU's provider deleted",
      timeoutMs: 15_000,
    });
    await eventually(async () => (await traitsOf(kept!.rpUuid)) === 'CUSTOM_FAKE_GPU_V2,OWNER_CYBORG', {
      what: "the changed GPU's old trait gone",
      timeoutMs: 15_000,
    });
    expect(stack.sync.status(kept!.id)).toMatchObject({ status: 'in_sync' });
    expect(stack.conductor.getAccelerator(kept!.id).traits).toEqual(['CUSTOM_FAKE_GPU_V2']);
  });
});
