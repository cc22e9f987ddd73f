import { Kvm, type KV } from '@nats-io/kv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARQ_HOME, hostKey } from '../../actors/cluster/index.js';
import type { RemoteControlPlane } from '../../control/client.js';
import { freshDatabase, query } from '../support/database.js';
import { svc } from '../services.js';
import { Deployment } from './deployment.js';
import type { RoleProcess } from './helpers.js';
import type { AcceleratorView } from '../../model/index.js';
import { eventually } from '../support/eventually.js';

/**
 * Two conductors split the hosts; ARQs live with one of them, the ARQ home, whichever conductor
 * Nova's calls reach. The home binds ARQs to devices of hosts the other conductor holds, and when
 * it dies the other one takes the ARQs over from the database.
 */
describe.skipIf(!svc.nats || !svc.postgres)('ARQs with several conductors', { timeout: 300_000 }, () => {
  let dep: Deployment;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let kv: KV;
  let api: RemoteControlPlane;
  const conductors = new Map<string, RoleProcess>();

  const ownerOf = async (host: string): Promise<string | undefined> => {
    const e = await kv.get(hostKey(host));
    return e?.operation === 'PUT' ? e.json<{ owner: string }>().owner : undefined;
  };
  const fpgaOf = (host: string): AcceleratorView => api.listAccelerators({ host, type: 'FPGA' })[0]!;
  const bind = (uuid: string, host: string, vm: string) =>
    api.bindArq(uuid, { hostname: host, deviceRpUuid: fpgaOf(host).rpUuid, instanceUuid: vm, projectId: null });
  const newArq = () => api.createArq({ deviceProfileName: 'fpga-profile', deviceProfileGroupId: 0, projectId: null });

  beforeAll(async () => {
    db = await freshDatabase('nats_arq_home');
    dep = new Deployment(svc.nats!, db.url);
    conductors.set('conductor-1', await dep.conductor('conductor-1'));
    conductors.set('conductor-2', await dep.conductor('conductor-2'));
    await dep.agent('node-a');
    await dep.agent('node-b');
    api = await dep.api();
    kv = await new Kvm(dep.bus!.nc).open(`${dep.prefix}_cyborg_leases`);
  }, 240_000);
  afterAll(async () => {
    await dep?.stop();
    await db?.drop();
  });

  it("serves every ARQ call from the home, binds devices the other conductor holds, and survives the home's death", async () => {
    dep.logsOnFailure();
    await eventually(() => api.listAccelerators().length === 4, { what: "both hosts' accelerators" });
    for (const host of ['node-a', 'node-b']) expect((await api.act(fpgaOf(host).id, { type: 'ENABLE' })).state).toBe('ready');
    const owners = { a: (await ownerOf('node-a'))!, b: (await ownerOf('node-b'))! };
    expect(owners.a && owners.b).toBeTruthy();
    // A conductor claimed the home at its start. It is moved (as a lease record) to the conductor
    // that does NOT hold node-b, so that a bind to node-b crosses over.
    const first = await eventually(() => ownerOf(ARQ_HOME), { what: 'a conductor to claim the ARQ home at start' });
    const home = [...conductors.keys()].find((id) => id !== owners.b)!;
    const other = [...conductors.keys()].find((id) => id !== home)!;
    if (first !== home) {
      await kv.put(hostKey(ARQ_HOME), new TextEncoder().encode(JSON.stringify({ host: ARQ_HOME, owner: home })));
      // The first home lets go once it sees the record move; only then do calls start.
      await conductors.get(first)!.waitLog((l) => l.msg === 'no longer the ARQ home: its ARQs are dropped here', 'the first home to let go', 30_000);
    }

    // Several calls, so that the queue group hands some to each conductor: all are served.
    const arqs = await Promise.all([newArq(), newArq(), newArq(), newArq()]);
    expect(arqs.map((a) => a.state)).toEqual(['Initial', 'Initial', 'Initial', 'Initial']);

    const local = await bind(arqs[0]!.uuid, 'node-a', 'vm-1');
    const crossed = await bind(arqs[1]!.uuid, 'node-b', 'vm-2');
    expect([local.state, crossed.state], JSON.stringify({ local: local.error, crossed: crossed.error })).toEqual(['Bound', 'Bound']);
    expect(crossed.boundTo).toMatchObject({ acceleratorId: fpgaOf('node-b').id });
    await eventually(() => fpgaOf('node-b').allocations.some((x) => x.arqUuid === arqs[1]!.uuid), { what: "node-b's FPGA to show the ARQ's allocation" });

    // Unbinding across conductors releases the handle on the conductor that holds it.
    expect((await api.unbindArq(arqs[1]!.uuid)).state).toBe('Unbound');
    await eventually(() => fpgaOf('node-b').allocations.length === 0, { what: "node-b's FPGA released" });
    expect((await bind(arqs[2]!.uuid, 'node-b', 'vm-3')).state).toBe('Bound');

    // Device profiles are the home's too: of racing creates with one name exactly one wins,
    // whichever conductor each reached, and a delete reaches the copy that exists (eight calls:
    // the queue group hands some to each conductor).
    const profile = (i: number) => ({
      uuid: `00000000-0000-4000-8000-00000000000${i}`,
      name: 'gpu-profile',
      description: null,
      groups: [{ 'resources:FPGA': '1' }],
      createdAt: new Date().toISOString(),
      updatedAt: null,
    });
    const creates = await Promise.allSettled([1, 2, 3, 4, 5, 6, 7, 8].map((i) => api.documents.createProfile(profile(i))));
    expect(creates.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(creates.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason.code)).toEqual(
      Array(7).fill('device_profile.conflict'),
    );
    const made = (creates.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ uuid: string }>).value;
    await Promise.all([1, 2, 3, 4].map(() => api.documents.deleteProfile(made.uuid)));
    expect(await query(db.url, `select uuid from device_profiles where name = 'gpu-profile'`)).toEqual([]);

    // The home dies: the other conductor takes the ARQs over, as committed, and serves them.
    await conductors.get(home)!.kill('SIGKILL');
    await conductors.get(other)!.waitLog((l) => l.msg === 'this conductor is the ARQ home now' && l.takeover === true, 'the ARQ home taken over', 90_000);
    await eventually(async () => (await dep.stats('conductor', other)).ownedHosts === 2, { what: 'the survivor to hold both hosts', timeoutMs: 90_000 });
    const survivors = await Promise.all(arqs.map((a) => eventually(() => api.getArq(a.uuid), { what: `ARQ ${a.uuid} in the read model` })));
    expect(survivors.map((a) => a.state)).toEqual(['Bound', 'Unbound', 'Bound', 'Initial']);
    expect((await api.unbindArq(arqs[0]!.uuid)).state).toBe('Unbound');
    expect((await bind(arqs[3]!.uuid, 'node-a', 'vm-4')).state).toBe('Bound');
    expect((await api.deleteArq(arqs[1]!.uuid)).state).toBe('Deleted');

    // An api process that starts now reads the ARQs from the new home.
    const fresh = await dep.api();
    expect(
      fresh
        .listArqs()
        .map((a) => `${a.uuid}:${a.state}`)
        .sort(),
    ).toEqual([`${arqs[0]!.uuid}:Unbound`, `${arqs[2]!.uuid}:Bound`, `${arqs[3]!.uuid}:Bound`].sort());
  });
});
