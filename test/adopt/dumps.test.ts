import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NAMESPACE_DNS, uuid3 } from '../../ids/index.js';
import { PlacementClient } from '../../openstack/placement/client.js';
import { cyborgProcess, errorLines } from '../cli/spawn.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { placementAuthFor } from '../keystone/placement-auth.js';
import { DUMPS, dumpServerMissing, hostOf, loadDump } from './cyborg-db.js';
import { cutOver, novaInstalled, novaScript, targetRows, type CutOver, type NovaCalls } from './cut-over.js';

const PROJECT = '7acee29c852d4c0ab3764d118be2a3b4';
/** Cyborg's state names as our v2 API shows the machine states adopted from them. */
const SHOWN: Record<string, string> = { BindStarted: 'BindFailed' };

/**
 * The move from a real OpenStack Cyborg, for each committed dump (test/fixtures/cyborg-db/: made by
 * Cyborg's own code at 9.0.0's schema and at master's on MariaDB, `pg-*` at 9.0.0's on PostgreSQL,
 * each read from its own server): the dry run's verdict, the adoption into a
 * fresh PostgreSQL checked row by row against the source, a second run that imports 0, the source
 * unchanged; then the cut-over — our conductor and an agent of the dump's host against the real
 * Placement, as Cyborg left it (providers, inventories, traits, Nova's allocations) — with no
 * provider created or deleted, and Nova's own client code on the adopted ARQs.
 */
const CASES = DUMPS.map((d) => [d, dumpServerMissing(d) ? `(skipped: ${dumpServerMissing(d)})` : ''] as const);
describe.skipIf(!svc.postgres).each(CASES)('cyborg adopt from the real Cyborg database %s %s', (dump) => {
  const missing = dumpServerMissing(dump);
  const host = hostOf(dump);
  const rpName = `${host}_FakeDevice`;
  const rp = uuid3(NAMESPACE_DNS, rpName);
  let source: Awaited<ReturnType<typeof loadDump>>;
  let target: Awaited<ReturnType<typeof freshDatabase>>;

  beforeAll(async () => {
    if (missing) return;
    source = await loadDump(dump);
    target = await freshDatabase('adopt');
  });
  afterAll(async () => {
    await source?.drop();
    await target?.drop();
  });

  const run = (args: string[]) => cyborgProcess(['adopt', '--from', source.url, ...args], { env: { DATABASE_URL: target.url }, timeoutMs: 90_000 });

  it('dry run, adoption row by row with Cyborg uuids, a second run imports 0, the source never written', async ({ skip }) => {
    if (missing) return skip(missing);
    const before = await source.checksum();
    const dry = await run(['--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    const verdict = dry.stdout.trim().split('\n').at(-1)!;
    expect(verdict).toMatch(/^verdict: adoptable: \d+ rows of 1 hosts would be imported/);
    expect(await targetRows(target.url, 'select count(*)::int as n from extended_accelerator_requests')).toEqual([{ n: 0 }]);

    const first = await run([]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.trim().split('\n').at(-1)).toMatch(/^verdict: adopted \d+ rows of 1 hosts/);
    expect(errorLines(first.stderr)).toEqual([]);

    // Row by row: every profile, deployable, attach handle and ARQ of the source is here.
    const [adoption] = await targetRows(target.url, `select body from documents where collection = 'cyborg_adoption' and id = '${host}'`);
    const ours = adoption!.body.cyborgToOurs as Record<string, Record<string, string>>;
    const profiles = await source.rows('device_profiles');
    const ourProfiles = await targetRows(target.url, 'select uuid, name, profile_json, description from device_profiles order by id');
    expect(ourProfiles).toEqual(
      profiles.map((p) => ({ uuid: p.uuid, name: p.name, profile_json: JSON.stringify(JSON.parse(String(p.profile_json))), description: p.description })),
    );
    const deps = await source.rows('deployables');
    const ourDeps = await targetRows(target.url, 'select uuid, name, rp_uuid, num_accelerators, driver_name from deployables order by id');
    expect(ourDeps).toEqual(
      deps.map((d) => ({
        uuid: ours.deployables![String(d.uuid)],
        name: d.name,
        rp_uuid: d.rp_uuid,
        num_accelerators: d.num_accelerators,
        driver_name: d.driver_name,
      })),
    );
    expect(ourDeps[0]!.rp_uuid).toBe(rp);
    const handles = await source.rows('attach_handles');
    const ourHandles = await targetRows(target.url, 'select uuid, attach_type, attach_info, in_use from attach_handles order by id');
    expect(ourHandles).toEqual(
      // MySQL's in_use is 0/1, PostgreSQL's a boolean.
      handles.map((h) => ({ uuid: ours.attach_handles![String(h.uuid)], attach_type: h.attach_type, attach_info: h.attach_info, in_use: Boolean(h.in_use) })),
    );
    const attrs = await source.rows('attributes');
    const ourAttrs = await targetRows(target.url, 'select key, value from attributes order by id');
    expect(ourAttrs).toEqual(attrs.map((a) => ({ key: a.key, value: a.value })));
    const handleById = new Map(handles.map((h) => [h.id, ours.attach_handles![String(h.uuid)]]));
    const profileById = new Map(profiles.map((p) => [p.id, p.name]));
    const arqs = await source.rows('extended_accelerator_requests');
    const ourArqs = await targetRows(
      target.url,
      `select r.uuid, r.state, r.hostname, r.device_rp_uuid, r.instance_uuid, r.project_id, r.device_profile_name, r.device_profile_group_id, h.uuid as handle
       from extended_accelerator_requests r left join attach_handles h on h.id = r.attach_handle_id order by r.uuid`,
    );
    expect(arqs.length).toBeGreaterThan(0);
    const bound = (a: Record<string, unknown>) => a.hostname !== null && a.device_rp_uuid !== null && a.instance_uuid !== null;
    expect(ourArqs).toEqual(
      arqs
        .map((a) => ({
          uuid: a.uuid,
          state: SHOWN[String(a.state)] ?? a.state,
          hostname: bound(a) ? a.hostname : null,
          device_rp_uuid: bound(a) ? a.device_rp_uuid : null,
          instance_uuid: bound(a) ? a.instance_uuid : null,
          project_id: a.project_id,
          device_profile_name: profileById.get(a.device_profile_id),
          device_profile_group_id: a.device_profile_group_id,
          handle: a.attach_handle_id === null ? null : handleById.get(a.attach_handle_id),
        }))
        .sort((x, y) => String(x.uuid).localeCompare(String(y.uuid))),
    );

    const second = await run([]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/^verdict: nothing to adopt .*: \d+ rows already adopted, 0 skipped$/m);
    for (const line of second.stdout.split('\n').filter((l) => /: imported/.test(l))) expect(line).toMatch(/imported 0,/);
    expect(await source.checksum()).toBe(before);
  }, 240_000);

  describe.skipIf(!svc.placement || missing)('the cut-over against the real Placement', () => {
    let placement: PlacementClient;
    let rt: CutOver | undefined;
    let instances: string[] = [];
    const newInstance = randomUUID();

    const cleanPlacement = async (): Promise<void> => {
      for (const i of [...instances, newInstance]) await placement.deleteAllocations(i);
      // And the holds cyborg takes for a hand-over Nova did not allocate (a bind without its allocation).
      for (const consumer of Object.keys(await placement.providerAllocations(rp))) await placement.deleteAllocations(consumer);
      if (await placement.getProvider(rp)) await placement.deleteProvider(rp);
      for (const p of await placement.providersByName(host)) await placement.deleteProvider(p.uuid);
    };

    beforeAll(async () => {
      // A loaded machine's Placement (it asks Keystone about every token) can take more than the stack's 5 s.
      placement = new PlacementClient({ url: svc.placement!, timeoutMs: 30_000, ...placementAuthFor(svc.placement!) });
      const arqs = await source.rows('extended_accelerator_requests');
      instances = arqs.filter((a) => a.state === 'Bound').map((a) => String(a.instance_uuid));
      await cleanPlacement();
      // Placement as Cyborg 9.0.0's conductor and Nova left it: the compute node (nova-compute's),
      // the deployable's provider under it with its inventory and trait, and the scheduler's allocations.
      const root = await placement.createProvider({ uuid: randomUUID(), name: host });
      await placement.createProvider({ uuid: rp, name: rpName, parentUuid: root.uuid });
      const inv = await placement.putInventories(rp, 0, { FPGA: { total: 16, max_unit: 16 } });
      await placement.ensureTrait('CUSTOM_FAKE_DEVICE');
      await placement.putTraits(rp, inv.generation, ['CUSTOM_FAKE_DEVICE']);
      for (const i of instances)
        await placement.putAllocations(i, {
          allocations: { [rp]: { resources: { FPGA: 1 } } },
          project_id: PROJECT,
          user_id: 'nova',
          consumer_generation: null,
        });
    });
    afterAll(async () => {
      await rt?.stop();
      await cleanPlacement();
    });

    it("the first agent report reconciles with the adopted records: no provider created or deleted, allocations untouched; Nova's calls work", async () => {
      const [adopted] = await targetRows(target.url, 'select id, state from accelerators');
      const ours = await cutOver(host, target.url);
      rt = ours;
      const stack = ours.stack;
      expect(ours.accelerators.map((a) => [a.id, a.rpUuid, a.state])).toEqual([[adopted!.id, rp, adopted!.state]]);
      expect(ours.writes(), 'providers created and deleted at the cut-over').toMatchObject({ creates: 0, deletes: 0 });
      expect((await placement.getProvider(rp))?.uuid).toBe(rp);
      expect((await placement.getUsages(rp)).FPGA ?? 0).toBe(instances.length);
      expect((await placement.getTraits(rp)).traits).toContain('CUSTOM_FAKE_DEVICE');
      expect(ours.accelerators[0]!.allocations?.map((a) => a.instanceUuid).sort() ?? []).toEqual([...instances].sort());

      if (!novaInstalled || instances.length === 0) return;
      const url = await stack.app.listen({ host: '127.0.0.1', port: 0 });
      const arqs = await source.rows('extended_accelerator_requests');
      const doomed = arqs.find((a) => a.instance_uuid && a.instance_uuid !== instances[0])!;
      const plan = {
        list: instances[0],
        delete: doomed.instance_uuid,
        bind: { profile: 'fpga-1', hostname: host, rp, instance: newInstance },
      };
      const out = await novaScript<NovaCalls>('nova_calls.py', `${url}/v2`, plan);
      const listed = arqs.find((a) => a.instance_uuid === instances[0] && a.state === 'Bound')!;
      expect(out.list).toEqual([
        {
          uuid: listed.uuid,
          state: 'Bound',
          device_profile_name: 'fpga-1',
          hostname: host,
          device_rp_uuid: rp,
          instance_uuid: instances[0],
          attach_handle_type: 'TEST_PCI',
          attach_handle_info: expect.objectContaining({ domain: '0000', bus: '0c' }),
        },
      ]);
      expect(out.by_uuid).toEqual(out.list);
      expect(out.delete_before).toEqual([doomed.uuid]);
      expect(out.delete_after).toEqual([]);
      expect(out.bound).toEqual([
        expect.objectContaining({ state: 'Bound', hostname: host, device_rp_uuid: rp, instance_uuid: newInstance, attach_handle_type: 'TEST_PCI' }),
      ]);
      expect(ours.writes()).toMatchObject({ creates: 0, deletes: 0 });
      process.stdout.write(`adopt ${dump}: Nova calls passed: ${out.calls}\n`);
    }, 240_000);
  });
});
