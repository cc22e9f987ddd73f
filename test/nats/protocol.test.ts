import { randomUUID } from 'node:crypto';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, type NatsBus } from '../../bus/nats.js';
import { ProtocolLevel } from '../../release/index.js';
import { captureLogger } from '../support/log.js';
import { eventually } from '../support/eventually.js';
import { svc } from '../services.js';

const Msg = Type.Object({ n: Type.Integer() });

/**
 * The protocol in the envelope on a real NATS: a message of a version this release cannot read —
 * from the future, garbled, two releases behind — is refused with one warn line naming it and the
 * way out (a request gets `bus.protocol_unsupported` back); one without a version is 0.1.0's,
 * read as protocol 1, and makes the receiver speak 1 while it is heard.
 */
describe.skipIf(!svc.nats)('protocol versions on the bus', () => {
  const prefix = `p${randomUUID().slice(0, 8)}`;
  const cap = captureLogger();
  let bus: NatsBus;
  let raw: NatsConnection;
  const got: number[] = [];

  /** The level's clock, moved past its first window once the bus is up (it listens that long before it speaks up). */
  let skew = 0;

  beforeAll(async () => {
    bus = await connectBus({
      url: svc.nats!,
      name: 'protocol-test',
      log: cap.log,
      prefix,
      protocol: new ProtocolLevel({ peerWindowMs: 60_000, now: () => Date.now() + skew }),
    });
    skew = 120_000;
    raw = await connect({ servers: svc.nats! });
    bus.subscribe('cyborg.test.pub', Msg, (m) => void got.push(m.n));
    bus.respond('cyborg.test.req', Msg, Msg, (m) => ({ n: m.n + 1 }));
    await bus.nc.flush();
  });
  afterAll(async () => {
    await bus?.close();
    await raw?.close();
  });

  const send = async (version: string | undefined, n: number): Promise<Record<string, unknown>> => {
    const h = headers();
    if (version !== undefined) {
      h.set('Cyborg-Protocol', version);
      // A peer of this release names itself; 0.1.0's (no version) cannot.
      h.set('Cyborg-Role', 'api');
      h.set('Cyborg-Host', 'api-2');
    }
    raw.publish(`${prefix}.cyborg.test.pub`, JSON.stringify({ n }), { headers: h });
    const reply = await raw.request(`${prefix}.cyborg.test.req`, JSON.stringify({ n }), { headers: h, timeout: 5_000 });
    return reply.json<Record<string, unknown>>();
  };

  it('refuses protocol 3 (a newer release), a garbled one and protocol 0, each naming the version and the way out', async () => {
    for (const [v, words] of [
      ['3', /protocol 3 is from a newer release: this cyborg 0\.2\.0 reads protocols 1–2; upgrade this role/],
      ['two', /garbled protocol version "two"/],
      ['0', /protocol 0 is 2 releases behind: .*upgrade the sender to 0\.1\.0 first/],
    ] as const) {
      const reply = await send(v, 1);
      expect(reply.__busError).toMatchObject({ code: 'bus.protocol_unsupported', message: expect.stringMatching(words) });
      await eventually(() => cap.lines.some((l) => l.msg.startsWith('refused a message:') && words.test(l.msg) && l.protocol !== undefined), {
        what: `the warn line for ${v}`,
      });
    }
    expect(got).toEqual([]);
  });

  it("reads a message without a version as 0.1.0's (protocol 1), and speaks 1 while that peer is heard", async () => {
    expect(bus.protocol.speaks()).toBe(2);
    expect(await send(undefined, 41)).toEqual({ n: 42 });
    await eventually(() => got.includes(41), { what: 'the headerless message delivered' });
    expect(await send('2', 7)).toEqual({ n: 8 });
    expect(bus.protocol.speaks()).toBe(1);
    expect(bus.protocol.describe().olderPeers?.[0]).toMatch(/\(0\.1\.0\)$/);
  });
});
