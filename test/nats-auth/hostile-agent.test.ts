/**
 * A hostile agent, with its own host's real credentials on the shipped permissions
 * (deploy/nats/), against two conductors on real PostgreSQL. Host B's GPU is enabled; host A's
 * credentials then publish, on host A's own subject as NATS allows, inventories that claim host
 * B's device, deployable and attach handle (the ids are UUIDv5 of public names, easy to compute),
 * one id twice, and an inventory before registering. Every one is refused with its reason, counted,
 * answered in our words (never PostgreSQL's), nothing of it is stored or moved, and no process exits.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, type NatsBus } from '../../bus/nats.js';
import { InventoryMessage, InventoryReply, RegisterMessage, RegisterReply } from '../../bus/schemas.js';
import { Subjects } from '../../bus/subjects.js';
import type { DeviceT } from '../../model/index.js';
import { svc } from '../services.js';
import { freshDatabase, query } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { captureLogger } from '../support/log.js';
import { Deployment } from '../nats/deployment.js';
import { AuthNats, envName, natsServerPresent, permissionsConf } from './server.js';

const PASSWORDS = { conductor: 'conductor-secret', api: 'api-secret', 'node-a': 'node-a-secret', 'node-b': 'node-b-secret' };
/** PostgreSQL's words a refusal must never carry. */
const DATABASE_TEXT = /duplicate key|violates|constraint|insert into|update "|SQLSTATE|deployables_|accelerators_pkey/i;

describe.skipIf(!natsServerPresent || !svc.postgres)('a hostile agent with its own credentials (real NATS permissions, PostgreSQL)', () => {
  let nats: AuthNats;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let dep: Deployment;
  let rogue: NatsBus;
  const rogueLog = captureLogger();
  let victim: DeviceT;

  beforeAll(async () => {
    db = await freshDatabase('hostile');
    dep = new Deployment('', db.url);
    nats = await AuthNats.start(permissionsConf(dep.prefix, ['node-a', 'node-b']), {
      CYBORG_CONDUCTOR_PASSWORD: PASSWORDS.conductor,
      CYBORG_API_PASSWORD: PASSWORDS.api,
      [`CYBORG_AGENT_${envName('node-a')}_PASSWORD`]: PASSWORDS['node-a'],
      [`CYBORG_AGENT_${envName('node-b')}_PASSWORD`]: PASSWORDS['node-b'],
    });
    (dep as { natsUrl: string }).natsUrl = nats.url;
    const conductor = { NATS_USER: 'conductor', NATS_PASSWORD: PASSWORDS.conductor };
    // Two conductors: whichever holds host A's lease, host B's devices may be held by the other one.
    await dep.conductor('conductor-1', conductor);
    await dep.conductor('conductor-2', conductor);
    await dep.agent('node-b', { NATS_USER: 'agent-node-b', NATS_PASSWORD: PASSWORDS['node-b'] });
    dep.bus = await connectBus({
      url: nats.url,
      name: 'test-api',
      log: dep.clientLog.log,
      prefix: dep.prefix,
      auth: { user: 'api', password: PASSWORDS.api },
      inboxPrefix: Subjects.apiInbox,
    });
    await dep.api();
    rogue = await connectBus({
      url: nats.url,
      name: 'rogue-agent-a',
      log: rogueLog.log,
      prefix: dep.prefix,
      auth: { user: 'agent-node-a', password: PASSWORDS['node-a'] },
      inboxPrefix: Subjects.agentInbox('node-a'),
    });
    const api = dep.client!;
    await eventually(() => api.listAccelerators({ host: 'node-b' }).some((a) => a.deviceType === 'GPU'), { what: "node-b's GPU in the view" });
    victim = api.hostInventory('node-b').find((d) => d.type === 'GPU')!;
    const gpu = api.listAccelerators({ host: 'node-b' }).find((a) => a.deviceType === 'GPU')!;
    expect((await api.act(gpu.id, { type: 'ENABLE' })).state).toBe('ready');
  }, 240_000);

  afterAll(async () => {
    await rogue?.close();
    await dep?.stop();
    await nats?.stop();
    await db?.drop();
  });

  let seq = 0;
  const send = (devices: DeviceT[]): Promise<unknown> =>
    rogue.request(
      Subjects.report('inventory', 'node-a'),
      InventoryMessage,
      InventoryReply,
      { host: 'node-a', agentId: 'rogue-a', epoch: 0, seq: ++seq, devices },
      { timeoutMs: 10_000 },
    );
  /** The refusal's text, checked to be ours: its reason said, no database words. */
  async function refused(devices: DeviceT[], why: RegExp): Promise<void> {
    const err = await send(devices).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err, 'the inventory was accepted').toBeInstanceOf(Error);
    expect(err!.message).toMatch(/inventory refused/);
    expect(err!.message).toMatch(why);
    expect(err!.message).not.toMatch(DATABASE_TEXT);
  }
  const fresh = (d: DeviceT, over: Partial<DeviceT> = {}): DeviceT => ({
    ...d,
    uuid: randomUUID(),
    deployables: d.deployables.map((x) => ({ ...x, uuid: randomUUID(), attachHandles: x.attachHandles.map((h) => ({ ...h, uuid: randomUUID() })) })),
    ...over,
  });

  it('refuses an inventory from a host that has not registered', async () => {
    dep.logsOnFailure();
    await refused([fresh(victim)], /has not registered/);
  });

  it("refuses every inventory that claims host B's device, deployable or attach handle, or names one id twice", async () => {
    dep.logsOnFailure();
    const own = await rogue.request(
      Subjects.report('register', 'node-a'),
      RegisterMessage,
      RegisterReply,
      { host: 'node-a', agentId: 'rogue-a', drivers: [], epoch: 0 },
      { timeoutMs: 10_000 },
    );
    expect(own.ok).toBe(true);

    const dep0 = victim.deployables[0]!;
    // Host B's GPU verbatim.
    await refused([victim], /belongs to host node-b/);
    // A made-up device around host B's deployable.
    const aroundDeployable = fresh(victim);
    aroundDeployable.deployables[0] = { ...aroundDeployable.deployables[0]!, uuid: dep0.uuid };
    await refused([aroundDeployable], /belongs to host node-b/);
    // A made-up device and deployable holding host B's attach handle.
    const aroundHandle = fresh(victim);
    aroundHandle.deployables[0]!.attachHandles[0] = { ...aroundHandle.deployables[0]!.attachHandles[0]!, uuid: dep0.attachHandles[0]!.uuid };
    await refused([aroundHandle], /belongs to host node-b/);
    // One device id twice in one report.
    const twice = fresh(victim);
    await refused([twice, { ...fresh(victim), uuid: twice.uuid }], /reported twice/);
  });

  it('cannot forge a reply for a request nobody made: the server refuses it on any inbox but its own', async () => {
    dep.logsOnFailure();
    const violations = (): number => rogueLog.lines.filter((l) => /permissions violation/i.test(JSON.stringify(l.err ?? ''))).length;
    const before = violations();
    // A conductor's, the api's and another agent's inboxes: a made-up reply to a driver command, a control call, a register.
    for (const inbox of ['_INBOX.Xq2v9TQ1nRd.abc', `${Subjects.apiInbox}.Xq2v9TQ1nRd.1`, `${Subjects.agentInbox('node-b')}.Xq2v9TQ1nRd.1`]) {
      rogue.nc.publish(inbox, JSON.stringify({ ok: true, result: { forged: true } }));
    }
    await eventually(() => violations() >= before + 3, { what: 'three refused publishes' });
    // The api still reads its own replies.
    const gpu = dep.client!.getAccelerator(victim.deployables[0]!.uuid);
    expect((await dep.client!.call('history', { id: gpu.id, limit: 5 }, gpu.host)).length).toBeGreaterThan(0);
  });

  it('has moved nothing: host B keeps its GPU enabled, in memory and in the database, and no process exited', async () => {
    dep.logsOnFailure();
    const api = dep.client!;
    const gpu = api.getAccelerator(victim.deployables[0]!.uuid);
    expect([gpu.host, gpu.state]).toEqual(['node-b', 'ready']);
    const rows = await query<{ id: string; host: string }>(db.url, 'select id, host from accelerators where id = $1', [victim.deployables[0]!.uuid]);
    expect(rows).toEqual([{ id: victim.deployables[0]!.uuid, host: 'node-b' }]);
    const onA = await query<{ n: number }>(db.url, `select count(*)::int as n from devices where hostname = 'node-a'`);
    expect(onA[0]!.n).toBe(0);
    expect(api.listAccelerators({ host: 'node-a' })).toEqual([]);
    // Each refusal logged by the conductor that held host A, with its reason (the metric's label).
    const lines = dep.procs.flatMap((p) => p.lines).filter((l) => l.msg === 'refused an inventory');
    expect(new Set(lines.map((l) => l.reason))).toEqual(new Set(['unregistered_host', 'foreign_device', 'duplicate_device']));
    expect(lines.filter((l) => l.reason === 'foreign_device')).toHaveLength(3);
    // And counted: cyborg_conductor_refused_reports{reason}, summed over both conductors' /metrics.
    const counted = { unregistered_host: 0, foreign_device: 0, duplicate_device: 0 };
    for (const p of dep.procs.filter((x) => x.name.startsWith('conductor'))) {
      const port = p.lines.find((l) => l.msg === 'conductor role up')!.metricsPort as number;
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      for (const reason of Object.keys(counted) as (keyof typeof counted)[]) {
        const m = new RegExp(`^cyborg_conductor_refused_reports\\{[^}]*reason="${reason}"[^}]*\\} (\\d+)$`, 'm').exec(text);
        counted[reason] += Number(m?.[1] ?? 0);
      }
    }
    expect(counted).toEqual({ unregistered_host: 1, foreign_device: 3, duplicate_device: 1 });
    expect(dep.procs.every((p) => p.alive)).toBe(true);
  });
});
