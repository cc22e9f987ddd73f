import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PlacementSync } from '../../actors/services/index.js';
import { svc } from '../services.js';
import { startStack, type Stack } from '../support/stack.js';
import { eventually } from '../support/eventually.js';
import { PlacementClient } from '../../openstack/placement/index.js';
import { PrivatePlacement, uniqueHost } from './harness.js';

/**
 * A fleet's first hour: Cyborg comes up with Placement empty (a new region, or Placement's
 * database rebuilt) and the sync's first pass puts every host's accelerators in, host after host,
 * at Placement's speed: each host is usable by Nova as soon as it is done, not when the whole
 * fleet is, and nothing is read back that Cyborg has just written. An empty Placement of its
 * own (another port, fresh database): the shared one is neither empty nor quick on a loaded machine.
 */
describe.skipIf(!svc.placement || !PrivatePlacement.available())('cold start into an empty Placement', () => {
  // One thread: its sqlite serves one writer at a time, so no write is lost to "database is locked" (a 500)
  // and retried — every request counted is one the sync chose to send.
  const placement = new PrivatePlacement({ PLACEMENT_THREADS: '1' });
  const hosts = Array.from({ length: 6 }, () => uniqueHost('cold'));
  let stack: Stack | undefined;
  let sync: PlacementSync | undefined;

  beforeAll(() => placement.start(), 120_000);
  afterAll(async () => {
    sync?.stop();
    await stack?.stop();
    await placement.stop(true);
  });

  it('converges host after host with no read-backs, about 3 requests per deployable', { timeout: 120_000 }, async () => {
    // Six hosts of ten accelerators each (Cyborg's fake FPGA and nine GPUs), as bench:fleet makes them.
    stack = await startStack({ hosts, fake: { gpus: 9, nics: 0 } });
    const views = stack.conductor.listAccelerators();
    expect(views).toHaveLength(60);
    // A patient client: a create that timed out but landed would be adopted (and read) on its retry.
    const client = new PlacementClient({ url: placement.url, token: 'admin', timeoutMs: 30_000 });
    const allocationReads = vi.spyOn(client, 'providerAllocations');
    const treeListings = vi.spyOn(client, 'providersInTree');
    const inSync = (host: string): boolean => views.filter((v) => v.host === host).every((v) => sync!.status(v.id)?.status === 'in_sync');
    // What Nova could already schedule on when the last host's first provider went in.
    let hostsDoneAtLastHostStart: number | undefined;
    const create = client.createProvider.bind(client);
    vi.spyOn(client, 'createProvider').mockImplementation((p) => {
      if (p.parentUuid && p.name.startsWith(hosts.at(-1)!)) hostsDoneAtLastHostStart ??= hosts.filter(inSync).length;
      return create(p);
    });
    const log = pino({ level: 'silent' });
    sync = new PlacementSync({
      source: stack.conductor,
      client,
      log,
      resourceProviderName: '{host}',
      createRootProviders: true,
      intervalMs: 3_600_000,
      concurrency: 4,
    });
    sync.start();
    await eventually(() => hosts.every(inSync), { what: 'every host in sync', timeoutMs: 100_000 });

    expect(hostsDoneAtLastHostStart).toBeGreaterThanOrEqual(1);
    // Providers (and roots) it created a moment ago hold nothing and have no children: not asked.
    expect(allocationReads).not.toHaveBeenCalled();
    expect(treeListings).not.toHaveBeenCalled();
    // Per host: the root looked up and created; per deployable: created, inventory, traits;
    // once: the version and the custom classes and traits.
    expect(client.requests / views.length).toBeLessThanOrEqual(3.5);
    for (const h of hosts) {
      const root = (await client.providersByName(h))[0]!;
      expect((await client.providersInTree(root.uuid)).length).toBe(11);
    }
  });
});
