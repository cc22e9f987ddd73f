/**
 * An authenticated bus: a private nats-server with the shipped per-role permissions
 * (deploy/nats/), a conductor, an api and the agents of two hosts, each with its own credentials.
 * The roles work with theirs; an agent cannot speak for another host nor stand in for a
 * conductor; a wrong password stops a role with a clear error; and a conductor on a bus without
 * permissions still refuses a report that names another host than its subject's.
 */
import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, type NatsBus } from '../../bus/nats.js';
import { HeartbeatMessage, RegisterMessage, RegisterReply } from '../../bus/schemas.js';
import { Subjects } from '../../bus/subjects.js';
import { eventually } from '../support/eventually.js';
import { captureLogger } from '../support/log.js';
import { Deployment } from '../nats/deployment.js';
import { PrivateNats, RoleProcess } from '../nats/helpers.js';
import { AuthNats, envName, natsServerPresent, permissionsConf } from './server.js';

const ci = process.env.CI === 'true' || process.env.CI === '1';
if (ci && !natsServerPresent) throw new Error('CI=true but /usr/sbin/nats-server is missing: the authenticated-bus tests must run');

// Said once in the run's output when skipped, as the shared services' skips are.
if (!natsServerPresent) console.warn('skipped test/nats-auth: /usr/sbin/nats-server is not installed');

const PASSWORDS = { conductor: 'conductor-secret', api: 'api-secret', 'node-a': 'node-a-secret', 'node-b': 'node-b-secret' };
const Anything = Type.Record(Type.String(), Type.Unknown());

describe.skipIf(!natsServerPresent)('an authenticated bus', () => {
  let nats: AuthNats;
  let dep: Deployment;
  let agentA: RoleProcess;
  const rogueLog = captureLogger();
  let rogue: NatsBus;

  beforeAll(async () => {
    dep = new Deployment('');
    nats = await AuthNats.start(permissionsConf(dep.prefix, ['node-a', 'node-b']), {
      CYBORG_CONDUCTOR_PASSWORD: PASSWORDS.conductor,
      CYBORG_API_PASSWORD: PASSWORDS.api,
      [`CYBORG_AGENT_${envName('node-a')}_PASSWORD`]: PASSWORDS['node-a'],
      [`CYBORG_AGENT_${envName('node-b')}_PASSWORD`]: PASSWORDS['node-b'],
    });
    (dep as { natsUrl: string }).natsUrl = nats.url;
    // The conductor's credentials in [nats]-style variables; host A's agent in the URL, as transport_url may carry them.
    await dep.conductor('conductor-auth', { NATS_USER: 'conductor', NATS_PASSWORD: PASSWORDS.conductor });
    agentA = await dep.agent('node-a', { NATS_URL: `nats://agent-node-a:${PASSWORDS['node-a']}@127.0.0.1:${nats.port}` });
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
  }, 240_000);

  afterAll(async () => {
    await rogue?.close();
    await dep?.stop();
    await nats?.stop();
  });

  it("lets each role work with its own credentials: host A's agent registers and its accelerators appear", async () => {
    dep.logsOnFailure();
    const api = dep.client!;
    await eventually(() => api.listAccelerators({ host: 'node-a' }).some((a) => a.deviceType === 'GPU'), { what: "node-a's GPU in the api's view" });
    const gpu = api.listAccelerators({ host: 'node-a' }).find((a) => a.deviceType === 'GPU')!;
    // A write goes api → conductor → agent (command on host A's subject) and back.
    expect((await api.act(gpu.id, { type: 'ENABLE' })).state).toBe('ready');
  });

  it("refuses host A's credentials a report for host B: it never reaches the conductor, and the agent goes on", async () => {
    dep.logsOnFailure();
    const forged = { host: 'node-b', agentId: 'rogue', drivers: [], epoch: 0 };
    await expect(rogue.request(Subjects.report('register', 'node-b'), RegisterMessage, RegisterReply, forged, { timeoutMs: 2_000 })).rejects.toThrow();
    rogue.publish(Subjects.report('heartbeat', 'node-b'), HeartbeatMessage, { host: 'node-b', agentId: 'rogue', epoch: 0, seq: 1, sentAt: Date.now() });
    await eventually(() => rogueLog.lines.some((l) => /permissions violation/i.test(JSON.stringify(l.err ?? ''))), {
      what: "the server's permission violation",
    });
    // Its own host's subject still works for it: the connection lives on.
    const own = await rogue.request(
      Subjects.report('register', 'node-a'),
      RegisterMessage,
      RegisterReply,
      { host: 'node-a', agentId: 'rogue-a', drivers: [], epoch: 0 },
      { timeoutMs: 5_000 },
    );
    expect(own.ok).toBe(true);
    const conductor = dep.procs[0]!;
    expect(conductor.lines.some((l) => l.msg === 'agent registered' && l.host === 'node-b')).toBe(false);
    expect(dep.client!.listHosts().map((h) => h.name)).not.toContain('node-b');
    expect(agentA.alive && conductor.alive).toBe(true);
  });

  it("refuses host A's credentials the conductor's subjects: it cannot answer the api's requests nor another host's commands", async () => {
    dep.logsOnFailure();
    let answered = 0;
    const offs = [
      rogue.respond(Subjects.conductorApi, Anything, Anything, () => {
        answered++;
        return {};
      }),
      rogue.respond(Subjects.command('node-b'), Anything, Anything, () => {
        answered++;
        return {};
      }),
      rogue.subscribe(Subjects.views, Anything, () => {
        answered++;
      }),
    ];
    await eventually(() => rogueLog.lines.filter((l) => l.msg === 'subscription error').length >= 3, { what: 'three refused subscriptions' });
    // The api's calls still reach the conductor, and only it.
    const api = dep.client!;
    const gpu = api.listAccelerators({ host: 'node-a' }).find((a) => a.deviceType === 'GPU')!;
    expect((await api.act(gpu.id, { type: 'DISABLE' })).state).toBe('inactive');
    expect(answered).toBe(0);
    offs.forEach((o) => o());
  });

  it("confines the api's credentials to its own inbox: it cannot listen to the replies agents and conductors get", async () => {
    dep.logsOnFailure();
    const apiLog = captureLogger();
    const snoop = await connectBus({
      url: nats.url,
      name: 'snooping-api',
      log: apiLog.log,
      prefix: dep.prefix,
      auth: { user: 'api', password: PASSWORDS.api },
      inboxPrefix: Subjects.apiInbox,
    });
    try {
      let heard = 0;
      const offs = [
        snoop.subscribe('_INBOX.>', Anything, () => {
          heard++;
        }),
        snoop.subscribe(`${Subjects.agentInbox('node-a')}.>`, Anything, () => {
          heard++;
        }),
      ];
      await eventually(() => apiLog.lines.filter((l) => l.msg === 'subscription error').length >= 2, { what: 'two refused subscriptions' });
      // Its own calls still come back to it (the api's view answers), and it heard nobody else's.
      const gpu = dep.client!.listAccelerators({ host: 'node-a' }).find((a) => a.deviceType === 'GPU')!;
      expect((await dep.client!.act(gpu.id, { type: 'ENABLE' })).state).toBe('ready');
      expect((await dep.client!.act(gpu.id, { type: 'DISABLE' })).state).toBe('inactive');
      expect(heard).toBe(0);
      offs.forEach((o) => o());
    } finally {
      await snoop.close();
    }
  });

  it('stops a role whose password is wrong, naming NATS authentication', async () => {
    const bad = RoleProcess.spawn(
      'agent node-b (wrong password)',
      ['agent', '--host', 'node-b', '--data-dir', `${dep.dir}/node-b-bad`],
      dep.env({ NATS_USER: 'agent-node-b', NATS_PASSWORD: 'not-the-password' }),
    );
    dep.procs.push(bad);
    await eventually(() => !bad.alive, { what: 'the agent to stop', timeoutMs: 60_000 });
    expect(bad.stderr).toMatch(/NATS authentication failed/);
    expect(bad.stderr).toMatch(/user agent-node-b/);
    expect(bad.stderr).not.toContain('not-the-password');
  });
});

describe.skipIf(!natsServerPresent)('a conductor on a bus without permissions', () => {
  let nats: PrivateNats;
  let dep: Deployment;

  beforeAll(async () => {
    nats = await PrivateNats.start();
    dep = new Deployment(nats.url);
    await dep.conductor('conductor-open');
    await dep.api();
  }, 240_000);

  afterAll(async () => {
    await dep?.stop();
    await nats?.stop();
  });

  it("drops and logs a report whose body names host B on host A's subject", async () => {
    dep.logsOnFailure();
    const bus = dep.bus!;
    await expect(
      bus.request(
        Subjects.report('register', 'node-a'),
        RegisterMessage,
        RegisterReply,
        { host: 'node-b', agentId: 'forger', drivers: [], epoch: 0 },
        { timeoutMs: 5_000 },
      ),
    ).rejects.toThrow(/must come on that host's subject/);
    bus.publish(Subjects.report('heartbeat', 'node-a'), HeartbeatMessage, { host: 'node-b', agentId: 'forger', epoch: 0, seq: 1, sentAt: Date.now() });
    const conductor = dep.procs[0]!;
    await eventually(
      () =>
        conductor.lines.filter(
          (l) => l.msg === "dropped an agent report naming another host than its subject's" && l.subjectHost === 'node-a' && l.host === 'node-b',
        ).length >= 2,
      { what: 'two drop lines naming both hosts' },
    );
    expect(conductor.lines.some((l) => l.msg === 'agent registered')).toBe(false);
    expect(dep.client!.listHosts()).toEqual([]);
    expect(conductor.alive).toBe(true);
  });
});
