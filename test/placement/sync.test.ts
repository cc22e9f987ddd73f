import { randomUUID } from 'node:crypto';
import { register } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { uuid3, NAMESPACE_DNS } from '../../ids/index.js';
import { svc } from '../services.js';
import {
  allInSync,
  allocate,
  createComputeNode,
  enableInPlacement,
  inventory,
  placementClient,
  readProvider,
  reservedBecomes,
  startSynced,
  stopAndTidy,
  type Synced,
  uniqueHost,
} from './harness.js';
import { eventually } from '../support/eventually.js';

/**
 * An operator's stories against a real OpenStack Placement (Debian's 8.0.0, noauth2): the
 * conductor's accelerators show up as Cyborg would report them, and stay true through
 * enable/disable, reprogramming, removal under an allocation and changes made by hand.
 */
describe.skipIf(!svc.placement)('placement sync against a real Placement', () => {
  const url = svc.placement!;
  let s: Synced | undefined;

  afterEach(async () => {
    await stopAndTidy(s);
    s = undefined;
  });

  it('reports fake-driver discovery as providers, inventories and traits exactly as Cyborg does', async () => {
    const host = uniqueHost();
    const probe = startSynced({ url, host });
    s = await probe;
    const root = await createComputeNode(s.client, host);
    await s.sync.reconcileNow();
    await allInSync(s);

    const tree = await s.client.providersInTree(root);
    const children = tree.filter((p) => p.uuid !== root);
    const names = [`${host}_FakeDevice`, `${host}_fake_gpu_40`, `${host}_fake_nic_80_vf0`, `${host}_fake_nic_80_vf1`];
    expect(children.map((p) => p.name).sort()).toEqual(names.sort());
    for (const p of children) {
      expect(p.uuid).toBe(uuid3(NAMESPACE_DNS, p.name));
      expect(p.parent_provider_uuid).toBe(root);
    }
    // Discovered accelerators are `inactive` (not enabled): their inventory is reserved.
    expect(await readProvider(s.client, uuid3(NAMESPACE_DNS, `${host}_FakeDevice`))).toEqual({
      inventories: inventory('FPGA', 16, 16),
      traits: ['CUSTOM_FAKE_DEVICE', 'OWNER_CYBORG'],
    });
    expect(await readProvider(s.client, uuid3(NAMESPACE_DNS, `${host}_fake_gpu_40`))).toEqual({
      inventories: inventory('PGPU', 1, 1),
      traits: ['CUSTOM_FAKE_GPU', 'OWNER_CYBORG'],
    });
    expect(await readProvider(s.client, uuid3(NAMESPACE_DNS, `${host}_fake_nic_80_vf1`))).toEqual({
      inventories: inventory('CUSTOM_NIC', 1, 1),
      traits: ['CUSTOM_FAKE_NIC', 'CUSTOM_VF', 'OWNER_CYBORG'],
    });
    const fpga = s.accelerator('FakeDevice');
    expect(s.sync.status(fpga.id)).toMatchObject({ status: 'in_sync', reason: null, flags: [] });
  });

  it('reserves the inventory of a disabled accelerator and frees it when enabled', async () => {
    s = await startSynced({ url, createRoots: true });
    await allInSync(s);
    const fpga = s.accelerator('FakeDevice');
    await enableInPlacement(s, fpga);
    await allInSync(s);
    await s.conductor.act(fpga.id, { type: 'DISABLE' });
    await reservedBecomes(s, fpga.rpUuid, 'FPGA', 16, 'FPGA reserved again');
    expect((await readProvider(s.client, fpga.rpUuid))!.inventories).toEqual(inventory('FPGA', 16, 16));
  });

  it('swaps the function trait on reprogram and leaves no stale one behind', async () => {
    s = await startSynced({ url, createRoots: true });
    await allInSync(s);
    const fpga = s.accelerator('FakeDevice');
    await s.conductor.act(fpga.id, { type: 'ENABLE' });
    await s.conductor.act(fpga.id, { type: 'PROGRAM', functionId: 'gzip-v1', bitstreamId: randomUUID() });
    await eventually(async () => (await s!.client.getTraits(fpga.rpUuid)).traits.includes('CUSTOM_FPGA_FUNCTION_ID_FAKE_GZIP_V1'), {
      what: 'function trait',
      timeoutMs: 15_000,
    });
    await s.conductor.act(fpga.id, { type: 'PROGRAM', functionId: 'aes' });
    await eventually(async () => (await s!.client.getTraits(fpga.rpUuid)).traits.includes('CUSTOM_FPGA_FUNCTION_ID_FAKE_AES'), {
      what: 'new function trait',
      timeoutMs: 15_000,
    });
    expect((await readProvider(s.client, fpga.rpUuid))!.traits).toEqual(['CUSTOM_FAKE_DEVICE', 'CUSTOM_FPGA_FUNCTION_ID_FAKE_AES', 'OWNER_CYBORG']);
  });

  it('keeps the provider of a removed device while Placement has an allocation on it, flagged; deletes it once freed', async () => {
    s = await startSynced({ url, createRoots: true });
    await allInSync(s);
    const gpu = s.accelerator('fake_gpu');
    await enableInPlacement(s, gpu);
    // Nova's scheduler claims the GPU in Placement (Cyborg never writes allocations).
    const consumer = await allocate(s.client, gpu.rpUuid, 'PGPU', 1);
    // The device disappears from discovery.
    s.fakes[0]!.unplug(gpu.deviceUuid);
    await s.agents[0]!.discoverAndReport();
    expect(s.conductor.getAccelerator(gpu.id).state).toBe('removed');
    await eventually(() => s!.sync.status(gpu.id)?.flags.some((f) => f.code === 'removed_but_allocated'), { what: 'removal flagged', timeoutMs: 15_000 });
    expect(await readProvider(s.client, gpu.rpUuid)).toEqual({ inventories: inventory('PGPU', 1, 0), traits: ['CUSTOM_FAKE_GPU', 'OWNER_CYBORG'] });
    expect(s.sync.drift().held).toBe(1);
    expect(await register.getSingleMetricAsString('cyborg_placement_drift')).toContain('cyborg_placement_drift{kind="held"} 1');

    await s.client.deleteAllocations(consumer);
    await s.sync.reconcileNow();
    await eventually(async () => (await s!.client.getProvider(gpu.rpUuid)) === null, { what: 'provider deleted', timeoutMs: 15_000 });
    expect(s.sync.status(gpu.id)).toMatchObject({ status: 'in_sync', flags: [] });
  });

  it('keeps the inventory of a lost host for its allocations, reserving only what is free', async () => {
    s = await startSynced({ url, createRoots: true, timing: { heartbeatIntervalMs: 50, staleAfterMs: 300, lostAfterMs: 600 } });
    await allInSync(s);
    const fpga = s.accelerator('FakeDevice');
    await enableInPlacement(s, fpga);
    const consumer = await allocate(s.client, fpga.rpUuid, 'FPGA', 2);
    await s.agents[0]!.stop(); // heartbeats stop: the host goes stale, then lost
    await eventually(() => s!.conductor.getAccelerator(fpga.id).state === 'offline', { what: 'accelerator offline', timeoutMs: 15_000 });
    await reservedBecomes(s, fpga.rpUuid, 'FPGA', 14, 'free part reserved');
    expect((await readProvider(s.client, fpga.rpUuid))!.inventories).toEqual(inventory('FPGA', 16, 14));
    expect(await s.client.getUsages(fpga.rpUuid)).toEqual({ FPGA: 2 });
    await s.client.deleteAllocations(consumer);
  });

  it('repairs changes made by hand in Placement and removes stale Cyborg providers', async () => {
    s = await startSynced({ url, createRoots: true, intervalMs: 300 });
    await allInSync(s);
    const fpga = s.accelerator('FakeDevice');
    const gpu = s.accelerator('fake_gpu');
    const root = (await s.client.providersByName(s.host))[0]!.uuid;
    const repairs = async (): Promise<number> => (await register.getSingleMetric('cyborg_placement_repairs_total')!.get()).values[0]?.value ?? 0;
    const repairsBefore = await repairs();
    // An operator deletes a trait and adds another, shrinks an inventory, and an old Cyborg left a provider behind.
    await s.client.ensureTrait('CUSTOM_LEFT_BEHIND');
    const t = await s.client.getTraits(fpga.rpUuid);
    await s.client.putTraits(fpga.rpUuid, t.generation, ['OWNER_CYBORG', 'CUSTOM_LEFT_BEHIND']);
    const inv = await s.client.getInventories(gpu.rpUuid);
    await s.client.putInventories(gpu.rpUuid, inv.generation, { PGPU: { total: 3, max_unit: 3 } });
    const leftover = await s.client.createProvider({ uuid: randomUUID(), name: `${s.host}_old_deployable`, parentUuid: root });
    await s.client.putTraits(leftover.uuid, leftover.generation, ['OWNER_CYBORG']);

    await eventually(
      async () => {
        const [f, g, l] = await Promise.all([readProvider(s!.client, fpga.rpUuid), readProvider(s!.client, gpu.rpUuid), s!.client.getProvider(leftover.uuid)]);
        return f?.traits.join() === 'CUSTOM_FAKE_DEVICE,OWNER_CYBORG' && g?.inventories.PGPU?.total === 1 && l === null;
      },
      { what: 'Placement repaired', timeoutMs: 20_000 },
    );
    expect(await readProvider(s.client, gpu.rpUuid)).toEqual({ inventories: inventory('PGPU', 1, 1), traits: ['CUSTOM_FAKE_GPU', 'OWNER_CYBORG'] });
    expect(await repairs()).toBeGreaterThanOrEqual(repairsBefore + 2);
  });

  it('moves a deployable provider left under an old compute node provider under the current one', async () => {
    const host = uniqueHost();
    const client = placementClient(url);
    const old = await client.createProvider({ uuid: randomUUID(), name: `${host}-old` });
    const rpUuid = uuid3(NAMESPACE_DNS, `${host}_FakeDevice`);
    await client.createProvider({ uuid: rpUuid, name: `${host}_FakeDevice`, parentUuid: old.uuid });
    const root = await createComputeNode(client, host);
    s = await startSynced({ url, host });
    await allInSync(s);
    expect((await client.getProvider(rpUuid))!.parent_provider_uuid).toBe(root);
    await client.deleteProvider(old.uuid);
  });

  it('reports a missing compute node provider clearly, and converges once nova-compute creates it', async () => {
    const host = uniqueHost();
    s = await startSynced({ url, host, createRoots: false });
    const fpga = s.accelerator('FakeDevice');
    await eventually(() => s!.sync.status(fpga.id)?.status === 'error', { what: 'error status', timeoutMs: 15_000 });
    expect(s.sync.status(fpga.id)!.reason).toContain(`no resource provider named "${host}"`);
    await createComputeNode(s.client, host);
    await allInSync(s); // retried with backoff, no operator action
    expect(await s.client.getProvider(fpga.rpUuid)).not.toBeNull();
  });
});
