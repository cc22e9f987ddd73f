import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';
import { CyborgError } from '../../errors/index.js';

/**
 * Host ownership among several conductors, held in a JetStream KV bucket (nats-server 2.9 has no
 * per-message TTL, so expiry is a timestamp in the record and every change is a compare-and-set
 * on the key's revision):
 *
 * - `conductor.<id>` = { id, expiresAt }: the conductor's own lease, renewed every `renewMs`.
 * - `host.<b64(host)>` = { host, owner }: which conductor owns the host. Valid while the owner's
 *   lease is. Another conductor takes the host over only once that lease has expired (plus a
 *   grace), by CAS on the host key's revision, so exactly one of several racing wins.
 *
 * Fencing: a conductor counts itself the owner only until `lastRenewal + ttl - margin` by its
 * own clock; after a lapse it lets its hosts go and takes back those still recorded as its own,
 * rebuilt from the database. Ownership moving away is seen through a KV watch.
 *
 * No conductor compares another's timestamps with its own clock: another conductor is alive for
 * `ttl + grace` after this one last saw its lease renewed (a new revision through the watch),
 * both read on this one's clock. Its renewal left before we saw it, so it fences itself before
 * we count it dead, whatever the clocks of the two machines say — skew neither lets a conductor
 * take a live one's hosts nor keeps a dead one's hosts for as long as its clock runs ahead. Only
 * clock rates must roughly agree. (`expiresAt` in the record is for people reading the bucket.)
 */
export interface LeaseOptions {
  kv: KV;
  conductorId: string;
  ttlMs: number;
  renewMs: number;
  /** Without `conductorId`: the table binds it on every line of its own. */
  log: Logger;
  /** A host whose record moved to another conductor, or every host when our lease lapsed. */
  onLost?: (hosts: string[]) => void;
  /** Hosts whose owner's lease has expired: candidates for takeover. */
  onOrphans?: (hosts: string[]) => void;
  /** This conductor's clock, ms (tests skew it); default: a monotonic clock on the epoch. */
  clock?: () => number;
}

interface ConductorRec {
  id: string;
  /** By the writer's clock: for people reading the bucket, never compared by another conductor. */
  expiresAt: number;
  /** The writer's lease length (absent in records of earlier versions: ours is assumed). */
  ttlMs?: number;
}

/** Another conductor's lease as we last saw it, and when (by our clock). */
interface SeenLease {
  rec: ConductorRec;
  seenAt: number;
}

const monotonic = (): number => performance.timeOrigin + performance.now();

interface HostRec {
  host: string;
  owner: string;
}

export type Claim = { mine: true; takeover: boolean } | { mine: false; owner: string };

const enc = new TextEncoder();
const GRACE_MS = 500;

export function hostKey(host: string): string {
  return `host.${Buffer.from(host).toString('base64url')}`;
}

function conductorKey(id: string): string {
  return `conductor.${Buffer.from(id).toString('base64url')}`;
}

export class LeaseTable {
  readonly id: string;
  private conductors = new Map<string, SeenLease>();
  private hosts = new Map<string, HostRec & { revision: number }>();
  /** Hosts we own and have verified since our last lapse. */
  private mine = new Set<string>();
  /**
   * Hosts whose claim is in flight: the watch may show our record before the CAS that wrote it
   * returns, and the orphan scan must not take such a host for one we let go of.
   */
  private claiming = new Set<string>();
  private myRevision = 0;
  private lastRenewal = 0;
  private timer: NodeJS.Timeout | undefined;
  private watchStop: (() => void) | undefined;
  private stopped = false;
  /**
   * A graceful stop has begun. A renewal already in flight must not go on to its orphan scan:
   * our hosts are out of `mine` but their records are still there while we delete them one by
   * one, so it would "take over" every host of a conductor that is shutting down.
   */
  private stopping = false;

  private readonly now: () => number;
  /** `conductorId` bound here, whoever built it: pino repeats a key that a binding and a call both carry. */
  private readonly log: Logger;

  constructor(private readonly opts: LeaseOptions) {
    this.id = opts.conductorId;
    this.log = opts.log.child({ conductorId: opts.conductorId });
    this.now = opts.clock ?? monotonic;
  }

  private record(): ConductorRec {
    return { id: this.id, expiresAt: this.now() + this.opts.ttlMs, ttlMs: this.opts.ttlMs };
  }

  /** Takes the conductor's own lease and starts the watch that mirrors every record. */
  async start(): Promise<void> {
    const rec = this.record();
    this.myRevision = await this.opts.kv.put(conductorKey(this.id), enc.encode(JSON.stringify(rec)));
    this.lastRenewal = this.now();
    this.conductors.set(this.id, { rec, seenAt: this.lastRenewal });
    const iter = await this.opts.kv.watch({ key: '>' });
    this.watchStop = () => iter.stop();
    let initial = true;
    const ready = new Promise<void>((resolve) => {
      void (async () => {
        for await (const e of iter) {
          this.apply(e.key, e.operation, e.revision, e.operation === 'PUT' ? e.value : undefined);
          if (initial && (e.delta ?? 0) === 0) {
            initial = false;
            resolve();
          }
        }
      })().catch((err: unknown) => this.log.error({ err }, 'lease watch ended'));
      // An empty bucket yields nothing: our own put above guarantees at least one entry.
    });
    await ready;
    this.timer = setInterval(() => void this.tick(), this.opts.renewMs);
    this.timer.unref();
  }

  /** True while our own lease is certainly valid by our clock. */
  valid(now = this.now()): boolean {
    return !this.stopped && now < this.lastRenewal + this.opts.ttlMs - Math.min(this.opts.renewMs, this.opts.ttlMs / 4);
  }

  owns(host: string): boolean {
    return this.mine.has(host) && this.valid();
  }

  /** Whether `host` has a lease record at all (held, or left by a conductor that died). */
  recorded(host: string): boolean {
    return this.hosts.has(host);
  }

  ownedHosts(): string[] {
    return [...this.mine];
  }

  /** The conductor that owns `host` now (ours or another live one), or undefined when none does. */
  ownerOf(host: string, now = this.now()): string | undefined {
    const h = this.hosts.get(host);
    if (!h) return undefined;
    return this.alive(h.owner, now) ? h.owner : undefined;
  }

  /** Live conductors, ours included. */
  liveConductors(now = this.now()): string[] {
    return [...this.conductors.keys()].filter((id) => this.alive(id, now));
  }

  /**
   * Makes us the owner of `host` if nobody holds it or its owner's lease expired; otherwise
   * says who owns it. Compare-and-set on the host key: of racing conductors exactly one wins.
   */
  async claim(host: string): Promise<Claim> {
    if (this.owns(host)) return { mine: true, takeover: false };
    // Catalogued (503 + Retry-After): the caller's retry reaches a conductor whose lease holds.
    if (!this.valid()) throw new CyborgError('lease.lost', "this conductor's lease is not valid; it may not claim hosts", { host });
    this.claiming.add(host);
    try {
      return await this.claimNow(host);
    } finally {
      this.claiming.delete(host);
    }
  }

  private async claimNow(host: string): Promise<Claim> {
    const key = hostKey(host);
    const body = enc.encode(JSON.stringify({ host, owner: this.id } satisfies HostRec));
    const current = await this.opts.kv.get(key);
    try {
      if (!current || current.operation !== 'PUT') {
        const revision = await this.opts.kv.create(key, body);
        this.take(host, revision);
        // A delete marker means another conductor owned it and let go: its writes are newer than our start.
        return { mine: true, takeover: current !== null };
      }
      const rec = current.json<HostRec>();
      if (rec.owner === this.id) {
        // Ours in the bucket but let go here (a lapse): rebuild it from the database like a takeover.
        this.take(host, current.revision);
        return { mine: true, takeover: true };
      }
      if (this.alive(rec.owner)) return { mine: false, owner: rec.owner };
      const revision = await this.opts.kv.update(key, body, current.revision);
      this.log.warn({ host, from: rec.owner }, 'took over a host whose conductor lease expired');
      this.take(host, revision);
      return { mine: true, takeover: true };
    } catch (err) {
      // Lost the race: someone else wrote the key first. Read who.
      const now = await this.opts.kv.get(key);
      const rec = now?.operation === 'PUT' ? now.json<HostRec>() : undefined;
      if (rec && rec.owner !== this.id) return { mine: false, owner: rec.owner };
      throw err;
    }
  }

  /**
   * Gives our lease back (graceful stop): our conductor record goes, so every other conductor sees
   * our hosts as orphans at once and takes them over (the lease tick's orphan scan). The host
   * records stay, naming us: a host given back is "between conductors", not unknown — a bind or a
   * release for it waits for its new holder instead of failing "host not found" (control/arq-ops.ts).
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopping = true;
    clearInterval(this.timer);
    // Emptied first: the watch hears our own delete, and it is no news to this conductor.
    this.mine.clear();
    await this.opts.kv.delete(conductorKey(this.id), { previousSeq: this.myRevision }).catch(() => undefined);
    this.stopped = true;
    this.mine.clear();
    this.watchStop?.();
  }

  private take(host: string, revision: number): void {
    this.hosts.set(host, { host, owner: this.id, revision });
    this.mine.add(host);
  }

  private alive(id: string, now = this.now()): boolean {
    if (id === this.id) return this.valid(now);
    const c = this.conductors.get(id);
    return c !== undefined && now < c.seenAt + (c.rec.ttlMs ?? this.opts.ttlMs) + GRACE_MS;
  }

  private apply(key: string, op: string, revision: number, value: Uint8Array | undefined): void {
    const [kind] = key.split('.');
    const parsed = value ? safeJson(value) : undefined;
    if (kind === 'conductor') {
      const rec = parsed as ConductorRec | undefined;
      const id = rec?.id ?? Buffer.from(key.slice('conductor.'.length), 'base64url').toString();
      if (op === 'PUT' && rec) this.conductors.set(id, { rec, seenAt: this.now() });
      else if (id !== this.id) this.conductors.delete(id);
      return;
    }
    if (kind !== 'host') return;
    const host = (parsed as HostRec | undefined)?.host ?? Buffer.from(key.slice('host.'.length), 'base64url').toString();
    if (op !== 'PUT' || !parsed) {
      this.hosts.delete(host);
      if (this.mine.delete(host)) this.opts.onLost?.([host]);
      return;
    }
    const rec = parsed as HostRec;
    this.hosts.set(host, { ...rec, revision });
    if (rec.owner !== this.id && this.mine.delete(host)) {
      this.log.warn({ host, owner: rec.owner }, 'host moved to another conductor');
      this.opts.onLost?.([host]);
    }
  }

  /** Renews our lease; after a lapse re-verifies our hosts; then looks for orphans to take over. */
  private async tick(): Promise<void> {
    if (this.stopped || this.stopping) return;
    const lapsed = !this.valid();
    try {
      const rec = this.record();
      const started = this.now();
      this.myRevision = await this.opts.kv.update(conductorKey(this.id), enc.encode(JSON.stringify(rec)), this.myRevision);
      // Renewals overlap while NATS is away (each waits for its reply); one sent before the outage
      // and answered after it must not move our renewal back to when it left.
      this.lastRenewal = Math.max(this.lastRenewal, started);
    } catch (err) {
      if (this.stopping) return;
      this.log.error({ err, lapsed }, 'could not renew the conductor lease');
      if (!this.valid() && this.mine.size > 0) this.opts.onLost?.([...this.mine]);
      if (!this.valid()) this.mine.clear();
      await this.recreate();
      return;
    }
    if (lapsed && this.mine.size > 0) {
      // Writes were refused while we lapsed, so our actors may be ahead of the database: let the
      // hosts go and take them back (the orphan scan below) rebuilt from what was committed.
      const all = [...this.mine];
      this.mine.clear();
      this.log.warn({ hosts: all.length }, 'lease lapsed and came back: rebuilding our hosts from the database');
      this.opts.onLost?.(all);
    }
    if (this.stopping) return; // stop() began while we renewed (see `stopping`)
    const now = this.now();
    // Orphans: hosts of dead conductors, and ours that we let go of during a lapse.
    const orphans = [...this.hosts.values()]
      .filter((h) => !this.claiming.has(h.host) && (h.owner === this.id ? !this.mine.has(h.host) : !this.alive(h.owner, now)))
      .map((h) => h.host);
    if (orphans.length > 0) this.opts.onOrphans?.(orphans);
  }

  /** Our record was changed or lost (a server that forgot its store): start a fresh lease. */
  private async recreate(): Promise<void> {
    try {
      const cur = await this.opts.kv.get(conductorKey(this.id));
      if (cur && cur.operation === 'PUT' && cur.revision !== this.myRevision) {
        this.myRevision = cur.revision;
        return; // the next tick's CAS uses the revision we now know
      }
      if (!cur || cur.operation !== 'PUT') {
        this.myRevision = await this.opts.kv.put(conductorKey(this.id), enc.encode(JSON.stringify(this.record())));
      }
    } catch {
      // NATS is away: the next tick tries again.
    }
  }
}

function safeJson(v: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(v).toString());
  } catch {
    return undefined;
  }
}
