import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcceleratorView, Capacity } from '../../model/index.js';
import { svc } from '../services.js';
import { allInSync, enableInPlacement, placementSums, reservedBecomes, startGpuHost, stopAndTidy, type Synced } from './harness.js';
import { eventually } from '../support/eventually.js';

/**
 * Every path that hands a device to a consumer shows in the real Placement as Nova sees it, and
 * every free undoes exactly that: a Nova boot (Nova's allocation, then the v2 bind), an
 * operator's attach, an instance attach (no allocation from Nova for either: Cyborg holds the
 * device itself). After each, Placement's usages and inventories show the device consumed, no
 * allocation candidate offers it, and `cyborg capacity` equals Placement's sums cell by cell —
 * with a held device quarantined, marked for maintenance and its host drained too.
 */
describe.skipIf(!svc.placement)('a device handed over is consumed in Placement, on every path', () => {
  const url = svc.placement!;
  let s: Synced;
  let gpus: AcceleratorView[];

  const sums = (): ReturnType<typeof placementSums> => placementSums(s);
  async function capacityCells(): Promise<Record<string, { total: number; reserved: number; used: number; free: number }>> {
    const c = (await s.app.inject({ method: 'GET', url: '/cyborg/v1/capacity' })).json() as Capacity;
    return Object.fromEntries(c.fleet.map((x) => [x.resourceClass, { total: x.total, reserved: x.reserved, used: x.used, free: x.free }]));
  }
  /** Capacity and Placement agree, once the sync has caught up with the last change. */
  async function agree(what: string): Promise<void> {
    await allInSync(s);
    await eventually(async () => JSON.stringify(await capacityCells()) === JSON.stringify(await sums()), {
      what: `capacity = Placement: ${what}`,
      timeoutMs: 20_000,
    });
    expect(await capacityCells(), what).toEqual(await sums());
  }
  const used = async (a: AcceleratorView): Promise<number> => (await s.client.getUsages(a.rpUuid))[a.resourceClass!] ?? 0;
  /** The providers Placement would offer Nova for one PGPU now. */
  async function candidates(): Promise<string[]> {
    const r = await s.client.call<{ provider_summaries: Record<string, unknown> }>('GET', '/allocation_candidates?resources=PGPU:1', { microversion: '1.29' });
    return Object.keys(r.provider_summaries).filter((rp) => gpus.some((g) => g.rpUuid === rp));
  }

  beforeAll(async () => {
    s = await startGpuHost(url, 3, 1);
    await allInSync(s);
    gpus = s.conductor.listAccelerators({ type: 'GPU' }).sort((a, b) => a.name.localeCompare(b.name));
    for (const g of gpus) await enableInPlacement(s, g);
    await agree('three GPUs enabled, nothing held');
  });
  afterAll(async () => {
    await stopAndTidy(s);
  });

  it('a Nova boot counts once (Nova allocated), an operator attach and an instance attach are held by Cyborg', async () => {
    const [nova, operator, instance] = gpus as [AcceleratorView, AcceleratorView, AcceleratorView];
    // Nova's path: the scheduler's allocation for the instance, then the v2 create and bind.
    const vm = randomUUID();
    await s.client.putAllocations(vm, {
      allocations: { [nova.rpUuid]: { resources: { PGPU: 1 } } },
      project_id: randomUUID(),
      user_id: randomUUID(),
      consumer_generation: null,
    });
    const arq = await s.conductor.createArq({ deviceProfileName: 'nova', deviceProfileGroupId: 0, projectId: null });
    expect((await s.conductor.bindArq(arq.uuid, { hostname: s.host, deviceRpUuid: nova.rpUuid, instanceUuid: vm })).state).toBe('Bound');
    await agree('a Nova boot');
    expect(await used(nova)).toBe(1); // Nova's own allocation, not a second one beside it
    expect(Object.keys(await s.client.providerAllocations(nova.rpUuid))).toEqual([vm]);

    // The operator's attach: Nova allocated nothing; Cyborg's hold stands for the instance.
    await s.conductor.attach(operator.id, { instanceUuid: randomUUID() });
    await agree("an operator's attach");
    expect(await used(operator)).toBe(1);

    // The instance attach, routed as an ARQ bind with no allocation from Nova.
    const attached = await s.app.inject({ method: 'POST', url: `/cyborg/v1/instances/${randomUUID()}/attach`, payload: { acceleratorId: instance.id } });
    expect(attached.statusCode, attached.body).toBe(200);
    await agree('an instance attach');
    expect(await used(instance)).toBe(1);
    // Nothing held is offered to Nova's next boot.
    expect(await candidates()).toEqual([]);
  });

  it('capacity equals Placement with a held device quarantined, marked for maintenance and drained', async () => {
    const [, operator, instance] = gpus as [AcceleratorView, AcceleratorView, AcceleratorView];
    s.fakes[0]!.injectHealthFault(operator.id, 'fatal', 'Xid 79: GPU has fallen off the bus');
    await s.agents[0]!.checkHealth();
    await eventually(() => s.conductor.getAccelerator(operator.id).health?.status === 'quarantined', { what: 'the held GPU quarantined' });
    await agree('a held GPU quarantined');
    expect(await used(operator)).toBe(1);
    await s.conductor.act(instance.id, { type: 'MAINTAIN', scope: 'device' });
    await agree('a held GPU marked for maintenance');
    expect((await s.app.inject({ method: 'POST', url: `/cyborg/v1/hosts/${s.host}/drain`, payload: {} })).statusCode).toBe(200);
    await agree('the host drained');
    for (const g of gpus) expect(await used(g), g.name).toBe(1);
  });

  it('every free undoes exactly what its hand-over did', async () => {
    const [nova, operator, instance] = gpus as [AcceleratorView, AcceleratorView, AcceleratorView];
    const instanceUuid = s.conductor.getAccelerator(instance.id).allocations[0]!.instanceUuid;
    expect((await s.app.inject({ method: 'POST', url: `/cyborg/v1/instances/${instanceUuid}/detach`, payload: {} })).statusCode).toBe(200);
    await s.conductor.detach(operator.id, {});
    await agree('the attaches undone');
    expect(await used(instance)).toBe(0);
    expect(await used(operator)).toBe(0);
    // Nova's allocation is Nova's to free: the unbind leaves it, Nova deletes it with the server.
    const arq = s.conductor.listArqs({}).find((a) => a.boundTo?.acceleratorId === nova.id)!;
    const vm = s.conductor.getAccelerator(nova.id).allocations[0]!.instanceUuid;
    await s.conductor.deleteArq(arq.uuid);
    await allInSync(s);
    expect(await used(nova)).toBe(1);
    expect(Object.keys(await s.client.providerAllocations(nova.rpUuid))).toEqual([vm]);
    // Nova frees its allocation with the server: no transition of Cyborg's says so, the next
    // full pass reserves what the drain keeps.
    await s.client.deleteAllocations(vm);
    await s.sync.reconcileNow();
    await reservedBecomes(s, nova.rpUuid, 'PGPU', 1, 'the drained GPU reserved once free');
    await agree('Nova freed its allocation');
  });
});
