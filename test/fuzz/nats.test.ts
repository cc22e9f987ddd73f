import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { buildApi } from '../../api/server.js';
import type { NatsBus } from '../../bus/nats.js';
import { ControlCalls, ControlReply, ControlRequest } from '../../control/messages.js';
import { serveControlPlane, ViewPublisher } from '../../control/responder.js';
import { Subjects } from '../../bus/subjects.js';
import type { DeviceT } from '../../model/device.js';
import { persona } from '../api-v2/harness.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { deepJson, hostileObject, hostileString, hostileValue, Rng, seedFromEnv } from './generate.js';

const MESSAGES = 500;
const SEED = seedFromEnv(19_0720);
const HOSTS = ['fuzz-a', 'fuzz-b'];
const GHOSTS = ['ghost-1', 'ghost-2'];
const MAX_DRIVERS = 64;

/** A device as a driver reports it, its strings and counts possibly hostile. */
function device(r: Rng, hostile: boolean, deployableUuid = `dep-${r.int(1e9)}`): DeviceT {
  const s = (ok: string): string => (hostile && r.chance(0.3) ? hostileString(r) : ok);
  return {
    uuid: s(`dev-${r.int(1e9)}`),
    type: 'FPGA',
    vendor: s('8086'),
    model: s('fuzz'),
    stdBoardInfo: s('{}'),
    vendorBoardInfo: s('{}'),
    stub: false,
    controlPath: { type: 'PCI', info: s('0000:09:00.0') },
    driver: s('fake'),
    deployables: [
      {
        uuid: s(deployableUuid),
        name: s('fpga'),
        numAccelerators: hostile && r.chance(0.2) ? 2 ** 40 : 1,
        driverName: s('fake'),
        attributes: [{ key: s('k'), value: s('v') }],
        attachHandles: [{ uuid: s(`ah-${r.int(1e9)}`), attachType: 'PCI', attachInfo: s('{}'), inUse: false }],
      },
    ],
  };
}

/** One message on one subject: garbage, deep, huge, or well-formed with bad semantics. */
function message(r: Rng, stack: Stack): { subject: string; data: string | Uint8Array } {
  const host = r.pick(HOSTS);
  const ghost = r.pick(GHOSTS);
  const other = HOSTS.find((h) => h !== host)!;
  const kind = r.pick(['register', 'inventory', 'heartbeat', 'health'] as const);
  const anySubject = (): string =>
    r.pick([Subjects.report(kind, host), Subjects.report(kind, ghost), Subjects.command(host), Subjects.driverCommand(host), Subjects.conductorApi]);
  switch (r.int(14)) {
    case 0:
      return { subject: anySubject(), data: randomBytes(r.int(2_000)) };
    case 1:
      return { subject: anySubject(), data: deepJson(10_000, r.chance(0.5)) };
    case 2:
      return { subject: anySubject(), data: JSON.stringify({ host: 'x'.repeat(900_000) }) };
    case 3:
      return {
        subject: anySubject(),
        data: JSON.stringify(hostileObject(r, ['host', 'agentId', 'epoch', 'seq', 'drivers', 'devices', 'op', 'args', 'checks'])),
      };
    // 5,000 drivers in one register.
    case 4:
      return {
        subject: Subjects.report('register', host),
        data: JSON.stringify({ host, agentId: 'fuzz', epoch: 0, drivers: Array.from({ length: 5_000 }, (_, i) => ({ name: `drv-${i}`, version: '1' })) }),
      };
    // An inventory for a host that never registered, or on another host's subject.
    case 5:
      return {
        subject: Subjects.report('inventory', r.chance(0.7) ? ghost : other),
        data: JSON.stringify({ host: ghost, agentId: 'fuzz', epoch: 0, seq: 1, devices: Array.from({ length: r.int(700) + 1 }, () => device(r, false)) }),
      };
    // Another host's deployable claimed by this one.
    case 6: {
      const theirs = [...(stack.conductor.hosts.get(other)?.accelerators.keys() ?? [])];
      return {
        subject: Subjects.report('inventory', host),
        data: JSON.stringify({ host, agentId: 'fuzz', epoch: 0, seq: 1, devices: [device(r, false, theirs[0] ?? 'none')] }),
      };
    }
    case 7:
      return { subject: Subjects.report('inventory', host), data: JSON.stringify({ host, agentId: 'fuzz', epoch: 0, seq: 1, devices: [device(r, true)] }) };
    case 8:
      return {
        subject: Subjects.report('register', host),
        data: JSON.stringify({
          host: r.chance(0.5) ? host : hostileString(r),
          agentId: hostileString(r),
          drivers: [{ name: hostileString(r), version: hostileString(r) }],
        }),
      };
    case 9:
      return {
        subject: Subjects.report(r.pick(['heartbeat', 'health'] as const), host),
        data: JSON.stringify({
          host,
          agentId: hostileValue(r),
          epoch: hostileValue(r),
          seq: 1,
          sentAt: 1,
          at: 1,
          checks: [{ deployableUuid: hostileString(r), healthy: false, reason: hostileString(r) }],
        }),
      };
    case 10:
      return {
        subject: r.pick([Subjects.command(host), Subjects.driverCommand(host)]),
        data: JSON.stringify({
          op: r.pick(['install', 'program', 'uninstall', 'attach', 'bogus']),
          idempotencyKey: hostileString(r),
          host,
          deployableUuid: hostileString(r),
          driver: r.pick(['fake', hostileString(r)]),
          params: { bitstreamId: hostileValue(r) },
        }),
      };
    // Control calls with arguments of the wrong type or meaning.
    case 11: {
      const accelerators = [...(stack.conductor.hosts.get(host)?.accelerators.keys() ?? ['none'])];
      const args = r.pick([
        { id: r.pick(accelerators), event: { type: 'PROGRAM', bitstreamId: { evil: true } }, meta: {} },
        { id: r.pick(accelerators), event: { type: 'PROGRAM', bitstreamId: hostileString(r) }, meta: {} },
        { uuid: r.pick(accelerators), status: 'bogus-status' },
        { uuid: hostileString(r), status: 'maintaining' },
        { req: { deviceProfileName: hostileString(r), deviceProfileGroupId: hostileValue(r), projectId: null }, meta: {} },
      ]);
      const op = 'status' in args ? 'documents.setDeviceStatus' : 'req' in args ? 'createArq' : 'act';
      return { subject: Subjects.conductorApi, data: JSON.stringify({ op, args }) };
    }
    case 12:
      return {
        subject: Subjects.conductorApi,
        data: JSON.stringify({ op: r.pick([...Object.keys(ControlCalls), hostileString(r).slice(0, 60)]), args: hostileValue(r) }),
      };
    default:
      return { subject: anySubject(), data: JSON.stringify(hostileValue(r)) };
  }
}

/**
 * A fuzzer on every subject the conductor and the agents listen on, against a real NATS and a
 * conductor on a real PostgreSQL journal: garbage bytes, deep and huge JSON, and well-formed
 * messages that claim what they may not (a ghost host's inventory, 5,000 drivers, a PROGRAM with an
 * object, a bogus device status). Afterwards the conductor still serves, nothing of it is in the
 * database, and an api built on a conductor restarted from that database answers every list.
 */
describe.skipIf(!svc.postgres || !svc.nats)('fuzzed bus messages on every subject', { timeout: 300_000 }, () => {
  let s: Stack;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let offControl: () => void = () => undefined;
  let publisher: ViewPublisher | undefined;

  beforeAll(async () => {
    db = await freshDatabase('fuzz_nats');
    s = await startStack({
      hosts: HOSTS,
      journal: { databaseUrl: db.url },
      bus: { natsUrl: svc.nats!, prefix: `fuzz${randomBytes(4).toString('hex')}` },
      log: quietLogger(),
      agent: { telemetryIntervalMs: 0 },
    });
    publisher = new ViewPublisher(s.bus, s.conductor, 'fuzz-conductor');
    offControl = serveControlPlane({ bus: s.bus, conductor: s.conductor, conductorId: 'fuzz-conductor', publisher, timeoutMs: 5_000, log: quietLogger() });
  }, 120_000);
  afterAll(async () => {
    offControl();
    publisher?.stop();
    await s?.stop();
    await db?.drop();
  });

  it(`drops or refuses each, persists none of it, and keeps serving (seed ${SEED})`, async () => {
    const bus = s.bus as NatsBus;
    const nc = bus.nc;
    const r = new Rng(SEED);
    // In groups, each a request so that its handling is over when the group is: what comes after sees its effects.
    for (let i = 0; i < MESSAGES; i += 25) {
      const group = Array.from({ length: Math.min(25, MESSAGES - i) }, () => message(r, s));
      await Promise.allSettled(group.map(async (m) => nc.request(bus.wire(m.subject), m.data, { timeout: 1_500 })));
    }
    await nc.flush();

    // Still serving over the bus: a control call answers and a write goes through.
    const gpu = [...s.conductor.hosts.get('fuzz-a')!.accelerators.keys()][0]!;
    const reply = await s.bus.request(
      Subjects.conductorApi,
      ControlRequest,
      ControlReply,
      { op: 'act', args: { id: gpu, event: { type: 'ENABLE' }, meta: {} } },
      { timeoutMs: 10_000 },
    );
    expect(reply.ok, JSON.stringify(reply)).toBe(true);

    // Nothing bad persisted.
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const q = async (sql: string): Promise<number> => (await c.query(sql)).rows[0].n as number;
      expect(await q(`select count(*)::int as n from hosts where name not in ('fuzz-a', 'fuzz-b')`), `seed ${SEED}: ghost hosts`).toBe(0);
      expect(await q(`select count(*)::int as n from accelerators where host not in ('fuzz-a', 'fuzz-b')`), `seed ${SEED}: ghost-host accelerators`).toBe(0);
      expect(
        await q(`select coalesce(max(k), 0)::int as n from (select count(*) as k from drivers group by host) d`),
        `seed ${SEED}: drivers of one host`,
      ).toBeLessThanOrEqual(MAX_DRIVERS);
      expect(
        await q(`select count(*)::int as n from documents where body ? 'status' and body->>'status' not in ('enabled', 'maintaining')`),
        `seed ${SEED}: bogus statuses`,
      ).toBe(0);
      expect(
        await q(`select count(*)::int as n from transition_log where args ? 'bitstreamId' and jsonb_typeof(args->'bitstreamId') <> 'string'`),
        `seed ${SEED}: a PROGRAM with an object`,
      ).toBe(0);
    } finally {
      await c.end();
    }

    // A conductor and an api started afresh on what was persisted answer every list.
    offControl();
    publisher?.stop();
    publisher = undefined;
    const conductor = await s.restartConductor();
    const app = await buildApi({ control: conductor, log: quietLogger() });
    try {
      const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, unknown>> }>();
      const lists = Object.entries(doc.paths)
        .filter(([p, ops]) => 'get' in ops && !p.includes('{') && !p.endsWith('/events'))
        .map(([p]) => p);
      expect(lists.length).toBeGreaterThan(5);
      for (const path of lists) {
        const res = await app.inject({ method: 'GET', url: path, headers: persona.admin });
        expect(res.statusCode, `seed ${SEED}: GET ${path} → ${res.body.slice(0, 300)}`).toBeLessThan(400);
      }
    } finally {
      await app.close();
    }
  });
});
