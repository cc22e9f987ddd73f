import { randomUUID } from 'node:crypto';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Conductor } from '../../actors/conductor/index.js';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { connectBus, type NatsBus } from '../../bus/nats.js';
import { Subjects } from '../../bus/subjects.js';
import { callConductor } from '../../control/client.js';
import { serveControlPlane, ViewPublisher } from '../../control/responder.js';
import { BusError } from '../../errors/index.js';
import { controlRows, sinceOf } from '../../model/index.js';
import { PROTOCOL, ProtocolLevel } from '../../release/index.js';
import { quietLogger } from '../support/log.js';
import { svc } from '../services.js';

/**
 * The verbs 0.1.0 (protocol 1) served, as its control/messages.ts named them at ded6a41: every
 * other row of the call table must say the protocol that brought it (`since`), or a new api
 * would send it to an old conductor that does not know it.
 */
const PROTOCOL_1_VERBS = [
  'act',
  'arqAttach',
  'arqHolds',
  'arqRelease',
  'arqReleased',
  'attach',
  'audit',
  'bindArq',
  'createArq',
  'deleteArq',
  'detach',
  'digest',
  'documents.createAttribute',
  'documents.createProfile',
  'documents.deleteAttribute',
  'documents.deleteProfile',
  'documents.setDeviceStatus',
  'drivers.get',
  'drivers.install',
  'drivers.list',
  'drivers.uninstall',
  'drivers.update',
  'history',
  'hosts.retire',
  'instances.attach',
  'instances.detach',
  'readiness',
  'relayout',
  'services.discover',
  'services.list',
  'snapshot',
  'unbindArq',
  'usage.accelerator',
  'usage.host',
];

describe('the call table says which protocol brought each verb', () => {
  it("gives every verb 0.1.0 did not serve a `since` of a protocol this release speaks, and 0.1.0's none", () => {
    for (const [op] of controlRows()) {
      const since = sinceOf(op);
      expect(since, op).toBeGreaterThanOrEqual(1);
      expect(since, op).toBeLessThanOrEqual(PROTOCOL.current);
      expect(since === 1, `${op}: since ${since}`).toBe(PROTOCOL_1_VERBS.includes(op));
    }
  });
});

/**
 * On a real NATS: a conductor refuses a verb written in a protocol older than its row's (the
 * sender's envelope says protocol 1, which has no such verb), and a process that speaks protocol 1
 * (pinned, as while older roles run) does not send it at all — both `bus.protocol_unsupported`,
 * naming the verb, its protocol and the way out. A verb of protocol 1 still goes both ways.
 */
describe.skipIf(!svc.nats)('protocol versions on the call table, on NATS', () => {
  const prefix = `pv${randomUUID().slice(0, 8)}`;
  let conductorBus: NatsBus;
  let pinned: NatsBus;
  let raw: NatsConnection;
  let conductor: Conductor;
  let publisher: ViewPublisher;
  let stop: () => void;
  const heard: string[] = [];

  beforeAll(async () => {
    const log = quietLogger();
    conductorBus = await connectBus({ url: svc.nats!, name: 'protocol-verbs-conductor', log, prefix });
    pinned = await connectBus({ url: svc.nats!, name: 'protocol-verbs-api', log, prefix, protocol: new ProtocolLevel({ pin: 1, peerWindowMs: 0 }) });
    conductor = new Conductor({
      bus: conductorBus,
      journal: new MemoryJournal(),
      log,
      timing: { driverOpTimeoutMs: 5_000, staleAfterMs: 60_000, lostAfterMs: 120_000, heartbeatIntervalMs: 60_000 },
    });
    await conductor.start();
    publisher = new ViewPublisher(conductorBus, conductor, 'c1');
    stop = serveControlPlane({ bus: conductorBus, conductor, conductorId: 'c1', publisher, timeoutMs: 5_000, log });
    raw = await connect({ servers: svc.nats! });
    raw.subscribe(`${prefix}.${Subjects.conductorApi}`, { callback: (_e, m) => void heard.push(m.json<{ op: string }>().op) });
    await conductorBus.nc.flush();
    await raw.flush();
  });
  afterAll(async () => {
    stop?.();
    publisher?.stop();
    await conductor?.stop();
    await Promise.all([conductorBus?.close(), pinned?.close(), raw?.close()]);
  });

  const ask = async (version: string, op: string): Promise<Record<string, unknown>> => {
    const h = headers();
    h.set('Cyborg-Protocol', version);
    h.set('Cyborg-Role', 'api');
    h.set('Cyborg-Host', 'api-old');
    const reply = await raw.request(`${prefix}.${Subjects.conductorApi}`, JSON.stringify({ op, args: {} }), { headers: h, timeout: 5_000 });
    return reply.json<Record<string, unknown>>();
  };

  it('refuses roles.seen (protocol 2) written in protocol 1, naming the verb, both versions and the way out; serves it in protocol 2', async () => {
    const refused = await ask('1', 'roles.seen');
    expect(refused).toMatchObject({
      ok: false,
      error: {
        code: 'bus.protocol_unsupported',
        message: expect.stringMatching(
          /^control call roles\.seen is protocol 2's \(cyborg 0\.2\.0\), but the request is written in protocol 1: .*upgrade-check/,
        ),
      },
    });
    expect(await ask('2', 'roles.seen')).toEqual({ ok: true, result: [] });
    // A verb of protocol 1 is served in either.
    expect(await ask('1', 'readiness')).toMatchObject({ ok: true, result: { conductorId: 'c1' } });
  });

  it('does not send roles.seen from a process that speaks protocol 1, and sends a protocol-1 verb as before', async () => {
    const before = heard.length;
    const err = await callConductor(pinned, Subjects.conductorApi, 'roles.seen', {}, { timeoutMs: 5_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BusError);
    expect((err as BusError).code).toBe('bus.protocol_unsupported');
    expect((err as BusError).message).toMatch(/^control call roles\.seen is protocol 2's \(cyborg 0\.2\.0\), but this process speaks protocol 1: /);
    expect(await callConductor(pinned, Subjects.conductorApi, 'readiness', {}, { timeoutMs: 5_000 })).toMatchObject({ conductorId: 'c1' });
    await raw.flush();
    await new Promise((r) => setTimeout(r, 100));
    expect(heard.slice(before)).toEqual(['readiness']);
  });
});
