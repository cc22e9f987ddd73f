/**
 * Issue 42: `host delete` removed its accelerators' providers from Placement but left the host's
 * root provider that Cyborg itself had created (`create_root_providers`, a setup without Nova):
 * one provider per retired host, for good. Now it goes with the host; a compute node's provider
 * that nova-compute made is never Cyborg's to delete. Against the real Placement.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { allInSync, createComputeNode, placementClient, startSynced, stopAndTidy, uniqueHost, type Synced } from '../placement/harness.js';

let s: Synced | undefined;
afterEach(async () => {
  await stopAndTidy(s);
  s = undefined;
});

const timing = { heartbeatIntervalMs: 50, staleAfterMs: 300, lostAfterMs: 600 };

async function retire(s: Synced): Promise<void> {
  await s.agents[0]!.stop();
  await eventually(() => s.conductor.getHost(s.host).state === 'lost', { what: 'the host lost' });
  await s.conductor.retireHost(s.host, { actor: 'ops-bob' });
}

describe.skipIf(!svc.placement)('host delete and the root provider Cyborg created', () => {
  it('created by Cyborg (no Nova): deleted with the host, children first', async () => {
    s = await startSynced({ url: svc.placement!, createRoots: true, intervalMs: 200, fake: { gpus: 1, nics: 0 }, timing });
    await allInSync(s);
    expect(await s.client.providersByName(s.host)).toHaveLength(1);
    await retire(s);
    expect(await s.client.providersByName(s.host)).toEqual([]);
  });

  it("nova-compute's: kept, only Cyborg's providers under it go", async () => {
    const host = uniqueHost();
    const client = placementClient(svc.placement!);
    const node = await createComputeNode(client, host);
    s = await startSynced({ url: svc.placement!, host, createRoots: true, intervalMs: 200, fake: { gpus: 1, nics: 0 }, timing });
    await allInSync(s);
    await retire(s);
    expect((await s.client.providersByName(host)).map((p) => p.uuid)).toEqual([node]);
    expect((await s.client.providersInTree(node)).map((p) => p.uuid)).toEqual([node]);
  });
});
