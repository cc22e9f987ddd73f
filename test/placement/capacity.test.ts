import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Capacity, CapacityCounts } from '../../model/index.js';
import { cyborg } from '../cli/harness.js';
import { svc } from '../services.js';
import {
  allInSync,
  allocate,
  enableInPlacement,
  placementSums as sums,
  reservedBecomes,
  startGpuHost,
  stopAndTidy,
  type Synced,
} from '../placement/harness.js';
import { eventually } from '../support/eventually.js';

/**
 * "How many GPUs are free?" answered by Cyborg must be what Nova's scheduler will find in
 * Placement: a fleet with an instance on a GPU, a quarantined GPU, one marked for maintenance, a
 * shared FPGA with two instances, then the whole host drained — after each, `cyborg capacity`
 * agrees with the real Placement's inventories and usages of the host's providers.
 */
describe.skipIf(!svc.placement)('capacity agrees with a real Placement', () => {
  const url = svc.placement!;
  let s: Synced;
  const get = async (query = ''): Promise<{ status: number; body: any }> => {
    const r = await s.app.inject({ method: 'GET', url: `/cyborg/v1/capacity${query}` });
    return { status: r.statusCode, body: r.json() };
  };

  const placementSums = (): ReturnType<typeof sums> => sums(s);

  async function agrees(what: string): Promise<Capacity> {
    await allInSync(s);
    const capacity = (await get()).body as Capacity;
    const mine = Object.fromEntries(
      capacity.fleet.map((c: CapacityCounts) => [c.resourceClass, { total: c.total, reserved: c.reserved, used: c.used, free: c.free }]),
    );
    expect(mine, what).toEqual(await placementSums());
    return capacity;
  }

  beforeAll(async () => {
    s = await startGpuHost(url, 3, 3);
    await allInSync(s);
  });
  afterAll(async () => {
    await stopAndTidy(s);
  });

  it('counts allocations, quarantines, maintenance and a drain as Placement does', async () => {
    const [busy, sick, serviced] = s.conductor.listAccelerators({ type: 'GPU' }).sort((a, b) => a.name.localeCompare(b.name));
    const fpga = s.accelerator('FakeDevice');
    for (const a of [busy!, sick!, serviced!, fpga]) await enableInPlacement(s, a);
    let c = await agrees('all enabled, nothing used');
    expect(c.fleet.find((x) => x.resourceClass === 'PGPU')).toMatchObject({ accelerators: 3, total: 3, used: 0, reserved: 0, free: 3 });

    // Nova's allocations in Placement, and the instances on Cyborg's side.
    // (Nova's consumer is the instance: the attach names it, so Placement counts it once.)
    await s.conductor.attach(busy!.id, { instanceUuid: await allocate(s.client, busy!.rpUuid, 'PGPU', 1) });
    for (let i = 0; i < 2; i++) await s.conductor.attach(fpga.id, { instanceUuid: await allocate(s.client, fpga.rpUuid, 'FPGA', 1) });
    s.fakes[0]!.injectHealthFault(sick!.id, 'fatal', 'Xid 79: GPU has fallen off the bus');
    await s.agents[0]!.checkHealth();
    await eventually(() => s.conductor.getAccelerator(sick!.id).health?.status === 'quarantined', { what: 'the sick GPU quarantined' });
    await s.conductor.act(serviced!.id, { type: 'MAINTAIN', scope: 'device' });
    await reservedBecomes(s, sick!.rpUuid, 'PGPU', 1, 'the quarantined GPU reserved');
    await reservedBecomes(s, serviced!.rpUuid, 'PGPU', 1, 'the serviced GPU reserved');
    c = await agrees('one GPU used, one quarantined, one in maintenance; the FPGA shared by two');
    expect(c.fleet.find((x) => x.resourceClass === 'PGPU')).toMatchObject({ total: 3, used: 1, reserved: 2, quarantined: 1, maintenance: 1, free: 0 });
    expect(c.fleet.find((x) => x.resourceClass === 'FPGA')).toMatchObject({ total: 16, used: 2, reserved: 0, free: 14 });
    expect(c.hosts).toEqual([{ host: s.host, classes: c.fleet }]);

    // The host drained: everything not allocated is reserved, the quarantine still said first.
    expect((await s.app.inject({ method: 'POST', url: `/cyborg/v1/hosts/${s.host}/drain`, payload: {} })).statusCode).toBe(200);
    await reservedBecomes(s, fpga.rpUuid, 'FPGA', 14, 'the drained FPGA reserved');
    c = await agrees('the host drained');
    expect(c.fleet.find((x) => x.resourceClass === 'FPGA')).toMatchObject({ used: 2, reserved: 14, maintenance: 14, free: 0 });
    expect(c.fleet.find((x) => x.resourceClass === 'PGPU')).toMatchObject({ used: 1, reserved: 2, quarantined: 1, maintenance: 1, free: 0 });

    // By trait: the fake FPGA's trait, with its class.
    const byTrait = (await get('?trait=CUSTOM_FAKE_DEVICE')).body as Capacity;
    expect(byTrait.fleet).toEqual([expect.objectContaining({ resourceClass: 'FPGA', total: 16 })]);
    expect(byTrait.traits).toEqual([expect.objectContaining({ trait: 'CUSTOM_FAKE_DEVICE', resourceClass: 'FPGA', used: 2 })]);
  });

  it('refuses a resource class, trait or host the fleet does not have, naming the field', async () => {
    const rc = await get('?resourceClass=CUSTOM_WARP_DRIVE');
    expect(rc.status).toBe(400);
    expect(rc.body).toMatchObject({ code: 'request.invalid', field: 'resourceClass' });
    expect(rc.body.message).toMatch(/resourceClass CUSTOM_WARP_DRIVE: no accelerator .*known: FPGA, PGPU/);
    expect((await get('?resourceClass=pgpu')).status).toBe(400);
    expect((await get('?trait=CUSTOM_NOPE')).body).toMatchObject({ code: 'request.invalid', field: 'trait' });
    expect((await get('?host=nowhere')).status).toBe(404);
  });

  it('cyborg capacity prints the fleet, per host and per trait', async () => {
    await s.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = s.app.server.address();
    const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const fleet = await cyborg('capacity', '--url', base);
    expect(fleet.code).toBe(0);
    expect(fleet.stdout).toMatch(/RESOURCE CLASS.*TOTAL.*USED.*RESERVED.*QUARANTINED.*MAINTENANCE.*FREE/);
    expect(fleet.stdout).toMatch(/│ PGPU\s+│ 3\s+│ 3\s+│ 1\s+│ 2\s+│ 1\s+│ 1\s+│ 0\s+│/);
    expect((await cyborg('capacity', '--by-host', '--url', base)).stdout).toContain(s.host);
    const bad = await cyborg('capacity', '--resource-class', 'CUSTOM_WARP_DRIVE', '--url', base);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('resourceClass CUSTOM_WARP_DRIVE');
  });
});
