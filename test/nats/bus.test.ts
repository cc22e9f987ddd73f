import { randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, type NatsBus } from '../../bus/nats.js';
import { svc } from '../services.js';
import { captureLogger } from '../support/log.js';
import { eventually } from '../support/eventually.js';

const Ping = Type.Object({ n: Type.Integer() });
const Pong = Type.Object({ n: Type.Integer(), by: Type.String() });

describe.skipIf(!svc.nats)('the NATS bus: the same contract as the in-process bus, on a real server', () => {
  const prefix = `t${randomUUID().slice(0, 8)}`;
  const logs = captureLogger();
  let a: NatsBus;
  let b: NatsBus;

  beforeAll(async () => {
    a = await connectBus({ url: svc.nats!, name: 'bus-test-a', log: logs.log, prefix });
    b = await connectBus({ url: svc.nats!, name: 'bus-test-b', log: logs.log, prefix });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('delivers a published message to a subscriber, validated against its schema', async () => {
    const got: number[] = [];
    const off = b.subscribe('cyborg.test.pub', Ping, (m) => void got.push(m.n));
    await b.nc.flush();
    a.publish('cyborg.test.pub', Ping, { n: 1 });
    await eventually(() => got.length === 1, { what: 'the published message' });
    expect(got).toEqual([1]);
    off();
  });

  it('answers a request through one member of a queue group', async () => {
    const offs = [
      a.respond('cyborg.test.rr', Ping, Pong, (m) => ({ n: m.n + 1, by: 'a' }), { queue: 'q' }),
      b.respond('cyborg.test.rr', Ping, Pong, (m) => ({ n: m.n + 1, by: 'b' }), { queue: 'q' }),
    ];
    await Promise.all([a.nc.flush(), b.nc.flush()]);
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => a.request('cyborg.test.rr', Ping, Pong, { n: i }, { timeoutMs: 5_000 })));
    expect(replies.map((r) => r.n)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    for (const off of offs) off();
  });

  it('drops a malformed message with a log line, keeps serving, and tells a requester it was invalid', async () => {
    const got: number[] = [];
    const off = b.subscribe('cyborg.test.bad', Ping, (m) => void got.push(m.n));
    const offR = b.respond('cyborg.test.badrr', Ping, Pong, (m) => ({ n: m.n, by: 'b' }));
    await b.nc.flush();
    a.nc.publish(`${prefix}.cyborg.test.bad`, 'not json {');
    a.nc.publish(`${prefix}.cyborg.test.bad`, JSON.stringify({ n: 'one' }));
    a.publish('cyborg.test.bad', Ping, { n: 2 });
    await eventually(() => got.length === 1, { what: 'the one valid message' });
    expect(got).toEqual([2]);
    expect(logs.lines.some((l) => l.msg === 'dropped a message that is not JSON' && l.subject === 'cyborg.test.bad')).toBe(true);
    expect(logs.lines.some((l) => l.msg === 'dropped a message that does not match its schema')).toBe(true);
    await expect(a.request('cyborg.test.badrr', Type.Object({ x: Type.String() }), Pong, { x: 'y' }, { timeoutMs: 5_000 })).rejects.toMatchObject({
      code: 'bus.invalid_message',
    });
    off();
    offR();
  });

  it('turns no responder and a silent responder into typed bus errors', async () => {
    await expect(a.request('cyborg.test.nobody', Ping, Pong, { n: 1 }, { timeoutMs: 2_000 })).rejects.toMatchObject({ code: 'bus.no_responder' });
    const off = b.respond('cyborg.test.slow', Ping, Pong, () => new Promise(() => undefined));
    await b.nc.flush();
    await expect(a.request('cyborg.test.slow', Ping, Pong, { n: 1 }, { timeoutMs: 200 })).rejects.toMatchObject({ code: 'bus.timeout' });
    off();
  });
});
