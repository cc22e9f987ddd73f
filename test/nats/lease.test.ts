import { randomUUID } from 'node:crypto';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FencedJournal } from '../../actors/cluster/index.js';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { LeaseTable } from '../../actors/cluster/index.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';

const log = pino({ level: 'silent' });

/** Host leases in a real JetStream KV bucket: one owner at a time, takeover after expiry, fenced writes. */
describe.skipIf(!svc.nats)('host leases in JetStream KV', () => {
  let nc: NatsConnection;
  let kv: KV;
  const bucket = `lease_test_${randomUUID().slice(0, 8)}`;
  const tables: LeaseTable[] = [];

  const table = async (id: string, ttlMs = 1_500, lost: string[][] = [], skewMs = 0): Promise<LeaseTable> => {
    const clock = skewMs ? () => Date.now() + skewMs : undefined;
    const t = new LeaseTable({ kv, conductorId: id, ttlMs, renewMs: 200, log, onLost: (h) => lost.push(h), ...(clock ? { clock } : {}) });
    await t.start();
    tables.push(t);
    return t;
  };

  beforeAll(async () => {
    nc = await connect({ servers: svc.nats! });
    kv = await new Kvm(nc).create(bucket, { history: 1 });
  });
  afterAll(async () => {
    for (const t of tables) await t.stop().catch(() => undefined);
    await kv?.destroy().catch(() => undefined);
    await nc?.close();
  });

  it('gives a host to exactly one of several racing conductors', async () => {
    const [a, b, c] = await Promise.all([table('a'), table('b'), table('c')]);
    const claims = await Promise.all([a!, b!, c!].map((t) => t.claim('host-race')));
    expect(claims.filter((x) => x.mine)).toHaveLength(1);
    const owner = [a!, b!, c!].find((t) => t.owns('host-race'))!;
    for (const x of claims) if (!x.mine) expect(x.owner).toBe(owner.id);
  });

  it("lets another conductor take a host over only once its owner's lease expired, and fences the old owner", async () => {
    const lostByOld: string[][] = [];
    const old = await table('old', 1_500, lostByOld);
    const heir = await table('heir');
    expect((await old.claim('host-x')).mine).toBe(true);
    expect(await heir.claim('host-x')).toEqual({ mine: false, owner: 'old' });

    const fenced = new FencedJournal(new MemoryJournal(), old);
    await fenced.commit([{ type: 'inventory', host: 'host-x', devices: [] }]);
    await expect(fenced.commit([{ type: 'inventory', host: 'host-y', devices: [] }])).rejects.toMatchObject({ code: 'lease.not_owner' });

    // The old conductor stops renewing (a stuck process): it fences itself before anyone takes over.
    (old as unknown as { timer: NodeJS.Timeout }).timer.close();
    await eventually(() => !old.valid(), { what: 'the old lease to lapse locally', timeoutMs: 10_000 });
    await expect(fenced.commit([{ type: 'inventory', host: 'host-x', devices: [] }])).rejects.toMatchObject({ code: 'lease.lost' });
    // A claim made on a lapsed lease is the catalogued error a client is told to retry (503), not a bare 500.
    await expect(old.claim('host-z')).rejects.toMatchObject({ name: 'CyborgError', code: 'lease.lost', status: 503 });

    const taken = await eventually(
      async () => {
        const c = await heir.claim('host-x');
        return c.mine ? c : undefined;
      },
      { what: 'the heir to take host-x over', timeoutMs: 10_000 },
    );
    expect(taken).toEqual({ mine: true, takeover: true });
    expect(heir.owns('host-x')).toBe(true);
  });

  it('does not count a host whose claim is still in flight among the orphans, though the watch already shows it ours', async () => {
    // The CAS has reached the server (so the watch hears of it) but its reply is held back.
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const slow = Object.create(kv) as KV;
    slow.create = async (key, body) => {
      const revision = await kv.create(key, body);
      await held;
      return revision;
    };
    const orphans: string[][] = [];
    const t = new LeaseTable({ kv: slow, conductorId: 'claimer', ttlMs: 60_000, renewMs: 100, log, onOrphans: (h) => orphans.push(h) });
    await t.start();
    tables.push(t);
    const claim = t.claim('host-inflight');
    await eventually(() => t.ownerOf('host-inflight') === 'claimer', { what: 'the watch to show the record', timeoutMs: 5_000 });
    // Several renewals (each runs the orphan scan) while the claim is held.
    const renewed = (t as unknown as { lastRenewal: number }).lastRenewal;
    await eventually(() => (t as unknown as { lastRenewal: number }).lastRenewal > renewed + 250, {
      what: 'renewals while the claim is held',
      timeoutMs: 5_000,
    });
    expect(orphans.flat()).not.toContain('host-inflight');
    release();
    expect(await claim).toEqual({ mine: true, takeover: false });
    expect(t.owns('host-inflight')).toBe(true);
  });

  it('takes nothing over when it stops while a renewal is in flight', async () => {
    // The renewal's CAS is held until the stop has begun deleting our host records (held too).
    let releaseUpdate!: () => void;
    let releaseDeletes!: () => void;
    const updateHeld = new Promise<void>((r) => {
      releaseUpdate = r;
    });
    const deletesHeld = new Promise<void>((r) => {
      releaseDeletes = r;
    });
    let renewing = false;
    let renewed = false;
    let holding = false;
    const slow = Object.create(kv) as KV;
    slow.update = async (key, body, rev) => {
      const revision = await kv.update(key, body, rev);
      if (holding) {
        renewing = true;
        await updateHeld;
        renewed = true;
      }
      return revision;
    };
    slow.delete = async (key, opts) => {
      await deletesHeld;
      return kv.delete(key, opts);
    };
    const orphans: string[][] = [];
    const t = new LeaseTable({ kv: slow, conductorId: 'stopper', ttlMs: 60_000, renewMs: 100, log, onOrphans: (h) => orphans.push(h) });
    await t.start();
    tables.push(t);
    for (const h of ['host-s1', 'host-s2']) expect((await t.claim(h)).mine).toBe(true);
    holding = true;
    await eventually(() => renewing, { what: 'a renewal to be in flight', timeoutMs: 5_000 });
    const stopped = t.stop();
    releaseUpdate();
    // Let the renewal finish (its orphan scan runs right after the CAS) before the deletes go out.
    await eventually(() => renewed, { what: 'the held renewal to return', timeoutMs: 5_000 });
    await new Promise((r) => setImmediate(r));
    releaseDeletes();
    await stopped;
    expect(orphans).toEqual([]);
  });
  /** Resolves once `id`'s lease record has been renewed `times` more times (seen in the bucket). */
  const renewals = async (id: string, times: number): Promise<void> => {
    const key = `conductor.${Buffer.from(id).toString('base64url')}`;
    const first = (await kv.get(key))!.revision;
    await eventually(async () => ((await kv.get(key))!.revision >= first + times ? true : undefined), {
      what: `${times} renewals of ${id}`,
      timeoutMs: 10_000,
    });
  };

  it("keeps a live conductor's host from one whose clock runs an hour ahead", async () => {
    const live = await table('live-on-time');
    const ahead = await table('an-hour-ahead', 1_500, [], 3_600_000);
    expect((await live.claim('host-skew-1')).mine).toBe(true);
    // Longer than ttl + grace: were the record's expiresAt read on the skewed clock, it would long be past.
    await renewals('live-on-time', 12);
    expect(await ahead.claim('host-skew-1')).toEqual({ mine: false, owner: 'live-on-time' });
    expect(ahead.liveConductors()).toContain('live-on-time');
  });

  it('takes a host over from a dead conductor whose clock ran an hour ahead within its ttl, not an hour later', async () => {
    const dead = await table('dead-an-hour-ahead', 1_500, [], 3_600_000);
    const heir = await table('heir-on-time');
    expect((await dead.claim('host-skew-2')).mine).toBe(true);
    expect(await heir.claim('host-skew-2')).toEqual({ mine: false, owner: 'dead-an-hour-ahead' });
    (dead as unknown as { timer: NodeJS.Timeout }).timer.close(); // stuck: renews no more
    const taken = await eventually(
      async () => {
        const c = await heir.claim('host-skew-2');
        return c.mine ? c : undefined;
      },
      { what: 'the heir to take host-skew-2 over', timeoutMs: 10_000 },
    );
    expect(taken).toEqual({ mine: true, takeover: true });
  });
});
