import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { Logger } from 'pino';
import type { Bus, MessageHandler, RequestHandler, SubscribeOptions, Unsubscribe } from '../../bus/index.js';
import { Subjects } from '../../bus/index.js';
import { reportFromItsHost, type ReportStats } from '../conductor/index.js';
import type { FencedJournal, HostState } from './fenced-journal.js';
import type { LeaseTable } from './lease.js';
import { CyborgError } from '../../errors/index.js';
import { PROTOCOL } from '../../release/index.js';

type Kind = 'register' | 'inventory' | 'heartbeat' | 'health';
type Route = { mine: true } | { mine: false; owner: string | undefined };
const MINE: Route = Object.freeze({ mine: true as const });

/**
 * What the router does to the conductor whose hosts it routes. That conductor is built on the bus
 * this router wraps, so it comes after the router: these reach it when called (a report, a lease
 * change, a takeover), never while either is being built.
 */
export interface RoutedConductor {
  /** Whether the host's actors are here. */
  hasHost(host: string): boolean;
  /** Rebuilds a host just claimed from what the database holds for it. */
  adoptHost(host: HostState['host'], records: HostState['records']): void;
  /** Stops a host's actors without writing: its lease moved. True when it was here. */
  releaseHost(host: string): boolean;
  /** Where reports that name another host than their subject's are counted. */
  reportStats(): ReportStats;
}

export interface HostRouterOptions {
  /** The bus the router forwards on (the plain one, not the one it wraps for the conductor). */
  bus: Bus;
  conductor: RoutedConductor;
  lease: LeaseTable;
  journal: FencedJournal;
  /** Without `conductorId`: the router binds the lease's on every line of its own. */
  log: Logger;
  forwardTimeoutMs: number;
  /**
   * How long a health report is tried again while its host's holder does not take it (dead, its
   * lease not yet expired, or moving): long enough for the lease to expire and be claimed.
   */
  redeliverForMs?: number;
  /** Hosts rebuilt here after a claim (the api read model hears of them). */
  onAdopted?: (hosts: string[]) => void;
}

/**
 * Decides, for each agent report, whether this conductor handles it: reports reach any
 * conductor of the queue group; the one that holds the host's lease handles them. A report for
 * a host nobody holds (or whose holder died) makes this conductor claim the lease and adopt the
 * host, rebuilt from the database; a report for a host another conductor holds is forwarded to it.
 */
export class HostRouter {
  private pending = new Map<string, Promise<Route>>();
  /** Takeover claims under way (`settled` waits on them as on `pending`). */
  private claiming = new Map<string, Promise<unknown>>();
  private takingOver = false;
  private queue: { host: string; fresh: boolean; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private draining = false;
  /**
   * Hosts whose lease is ours but whose rebuild from the database is not done yet. A report for
   * one waits for it: handled before, it would meet no host actor (and a registration would
   * create an empty one), then be overwritten by the rebuild.
   */
  private adopting = new Map<string, { done: Promise<void>; fresh: boolean }>();

  /**
   * Whether `host` is ours by its lease but not rebuilt here yet: ARQ releases must not take a
   * host still being rebuilt for one whose accelerators are gone.
   */
  rebuilding(host: string): boolean {
    return this.opts.lease.ownerOf(host) === this.opts.lease.id && (!this.opts.conductor.hasHost(host) || this.adopting.has(host));
  }

  /** `conductorId` bound here, whoever built it: pino repeats a key that a binding and a call both carry. */
  private readonly log: Logger;

  constructor(private readonly opts: HostRouterOptions) {
    this.log = opts.log.child({ conductorId: opts.lease.id });
  }

  route(host: string): Promise<Route> | Route {
    const { lease } = this.opts;
    if (lease.owns(host)) {
      const adopting = this.adopting.get(host);
      return adopting
        ? adopting.done.then(
            () => MINE,
            () => MINE,
          )
        : MINE;
    }
    const owner = lease.ownerOf(host);
    if (owner && owner !== lease.id) return { mine: false, owner };
    let p = this.pending.get(host);
    if (!p) {
      p = this.claim(host).finally(() => this.pending.delete(host));
      this.pending.set(host, p);
    }
    return p;
  }

  /**
   * Resolves once `host`, if this conductor is rebuilding it after a claim, has been rebuilt: a
   * call about the host must not run against the empty actor tree of a host just taken over.
   */
  settled(host: string): Promise<void> {
    const adopting = this.adopting.get(host);
    if (adopting) return adopting.done.catch(() => undefined);
    // Claimed, its rebuild not queued yet: others may see the lease move before the claim
    // returns here, and send calls about the host at once. The claim queues the rebuild.
    const claiming = this.pending.get(host) ?? this.claiming.get(host);
    return claiming
      ? claiming.then(
          () => this.settled(host),
          () => undefined,
        )
      : Promise.resolve();
  }

  /** The lease watch saw these hosts move away (or our lease lapse): stop writing them. */
  release(hosts: string[]): void {
    for (const name of hosts) {
      if (this.opts.conductor.releaseHost(name)) this.log.warn({ host: name }, 'released a host: its lease is no longer ours');
    }
  }

  /** Orphans found by the lease table: claim each (CAS), then rebuild the ones won in one load. */
  async takeOver(hosts: string[]): Promise<void> {
    if (this.takingOver) return;
    this.takingOver = true;
    try {
      // Each rebuild is queued as soon as its claim is won, so that reports for the host wait for
      // it (see `adopting`); rebuilds queued while one runs still go together in the next load.
      const won: Promise<void>[] = [];
      for (const host of hosts) {
        const claim = this.opts.lease.claim(host).catch(() => undefined);
        this.claiming.set(host, claim);
        const c = await claim;
        this.claiming.delete(host);
        // Already ours (a registration claimed it meanwhile): adopted by that path, not rebuilt again.
        if (c?.mine && c.takeover) won.push(this.adoptSoon(host, true));
      }
      if (won.length > 0) {
        await Promise.all(won);
        this.log.warn({ hosts: won.length }, 'took over the hosts of an expired conductor lease');
      }
    } finally {
      this.takingOver = false;
    }
  }

  private async claim(host: string): Promise<Route> {
    const c = await this.opts.lease.claim(host);
    if (!c.mine) return { mine: false, owner: c.owner };
    if (!this.opts.conductor.hasHost(host)) await this.adoptSoon(host, c.takeover);
    return { mine: true };
  }

  /**
   * Adoptions wait their turn and go in batches: every host claimed while one batch is being
   * rebuilt is rebuilt by the next, from one read of the database started after all those claims
   * (so after their previous owners' last writes). A thousand hosts taken over cost a few loads.
   */
  private adoptSoon(host: string, fresh: boolean): Promise<void> {
    // Already being rebuilt (from the database, when that is what is asked): that one counts.
    const under = this.adopting.get(host);
    if (under && (under.fresh || !fresh)) return under.done;
    const p = new Promise<void>((resolve, reject) => {
      this.queue.push({ host, fresh, resolve, reject });
      if (!this.draining) void this.drain();
    });
    const entry = { done: p, fresh };
    this.adopting.set(host, entry);
    const forget = (): void => {
      if (this.adopting.get(host) === entry) this.adopting.delete(host);
    };
    p.then(forget, forget);
    return p;
  }

  private async drain(): Promise<void> {
    this.draining = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0);
      for (const fresh of [true, false]) {
        const part = batch.filter((b) => b.fresh === fresh);
        if (part.length === 0) continue;
        try {
          await this.adopt(
            part.map((b) => b.host),
            fresh,
          );
          part.forEach((b) => b.resolve());
        } catch (err) {
          part.forEach((b) => b.reject(err));
        }
      }
    }
    this.draining = false;
  }

  /** Rebuilds hosts this conductor just took, from what the database holds for them. */
  private async adopt(hosts: string[], fresh: boolean): Promise<void> {
    const state = await this.opts.journal.hostsState(hosts, fresh);
    for (const { host, records } of state) {
      this.opts.conductor.adoptHost(host, records);
      this.log.info({ host: host.host, accelerators: records.size }, 'adopted a host from the database');
    }
    if (state.length > 0) this.opts.onAdopted?.(state.map((s) => s.host.host));
  }

  /** The bus the Conductor is given: agent reports pass through route() first. */
  wrap(inner: Bus): Bus {
    return new RoutedBus(
      inner,
      this,
      this.opts.conductor,
      this.opts.lease.id,
      this.opts.forwardTimeoutMs,
      this.opts.redeliverForMs ?? 2 * this.opts.forwardTimeoutMs,
      this.log,
    );
  }
}

// Health checks too: the conductor of the queue group that hears one may not hold the host, and
// one dropped there would leave a failing device in service.
const KINDS: Record<string, Kind> = {
  [Subjects.register]: 'register',
  [Subjects.inventory]: 'inventory',
  [Subjects.heartbeat]: 'heartbeat',
  [Subjects.health]: 'health',
};

/**
 * Reports that must reach the holder: a health check says once what a poll may not say again (a
 * pushed Xid, the bad check that completes a quarantine). Heartbeats are not: the next one says
 * the same. These are forwarded as requests the holder acknowledges, and tried again until one
 * does; the others are published.
 */
const ACKNOWLEDGED = new Set<Kind>(['health']);
const Ack = Type.Object({ ok: Type.Literal(true) });
/** First pause before a forward is tried again; doubled up to a second. */
const REDELIVER_FIRST_MS = 100;

/** A Bus decorator: host-addressed agent reports go to the lease holder; everything else passes. */
class RoutedBus implements Bus {
  private closing = false;

  constructor(
    private readonly inner: Bus,
    private readonly router: HostRouter,
    private readonly conductor: RoutedConductor,
    private readonly me: string,
    private readonly timeoutMs: number,
    private readonly redeliverForMs: number,
    private readonly log: Logger,
  ) {}

  publish<M extends TSchema>(subject: string, schema: M, msg: Static<M>): void {
    this.inner.publish(subject, schema, msg);
  }

  speaks(): number {
    return this.inner.speaks?.() ?? PROTOCOL.current;
  }

  request<Req extends TSchema, Rep extends TSchema>(
    subject: string,
    reqSchema: Req,
    repSchema: Rep,
    msg: Static<Req>,
    opts: { timeoutMs: number },
  ): Promise<Static<Rep>> {
    return this.inner.request(subject, reqSchema, repSchema, msg, opts);
  }

  subscribe<M extends TSchema>(subject: string, schema: M, handler: MessageHandler<M>, opts?: SubscribeOptions): Unsubscribe {
    const kind = KINDS[subject];
    if (!kind) return this.inner.subscribe(subject, schema, handler, opts);
    if (ACKNOWLEDGED.has(kind)) return this.subscribeAcknowledged(kind, subject, schema, handler, opts);
    const routed: MessageHandler<M> = async (msg, subj) => {
      // Checked where the report enters: once forwarded, its subject no longer names the host.
      if (!this.fromItsHost(subj, msg)) return;
      const r = await this.router.route(hostOf(msg));
      if (r.mine) return handler(msg, subj);
      if (r.owner) this.inner.publish(Subjects.conductorForward(r.owner, kind), schema, msg);
    };
    // Forwarded to us: handle if ours, never forward again (no loops while leases move).
    const direct: MessageHandler<M> = async (msg, subj) => {
      if ((await this.router.route(hostOf(msg))).mine) return handler(msg, subj);
      this.log.debug({ host: hostOf(msg), kind }, 'dropped a forwarded report for a host that is not ours');
    };
    const offs = [this.inner.subscribe(subject, schema, routed, opts), this.inner.subscribe(Subjects.conductorForward(this.me, kind), schema, direct)];
    return () => offs.forEach((o) => o());
  }

  /**
   * A report that must not be lost: handled here if ours, else forwarded to the holder, which
   * acknowledges it once handled; a forward nobody acknowledges (the holder died and its lease has
   * not expired, the lease moved meanwhile) is routed again after a pause, claiming the host once
   * its lease has expired, until `redeliverForMs` has passed.
   */
  private subscribeAcknowledged<M extends TSchema>(kind: Kind, subject: string, schema: M, handler: MessageHandler<M>, opts?: SubscribeOptions): Unsubscribe {
    const routed: MessageHandler<M> = async (msg, subj) => {
      if (!this.fromItsHost(subj, msg)) return;
      const host = hostOf(msg);
      const deadline = Date.now() + this.redeliverForMs;
      for (let pause = REDELIVER_FIRST_MS, tries = 1; ; pause = Math.min(pause * 2, 1_000), tries++) {
        const r = await this.router.route(host);
        if (r.mine) return handler(msg, subj);
        try {
          if (r.owner) {
            await this.inner.request(Subjects.conductorForward(r.owner, kind), schema, Ack, msg, {
              timeoutMs: Math.min(this.timeoutMs, Math.max(1, deadline - Date.now())),
            });
            if (tries > 1) this.log.info({ host, kind, owner: r.owner, tries }, 'a forwarded report was taken after retries');
            return;
          }
        } catch (err) {
          this.log.debug({ host, kind, owner: r.owner, err: (err as Error).message }, "the host's holder did not take a forwarded report; routing it again");
        }
        if (this.closing) return;
        if (Date.now() + pause >= deadline) {
          this.log.warn({ host, kind, tries, forMs: this.redeliverForMs }, 'no conductor took a report for the host: dropped');
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    };
    // Forwarded to us: acknowledged once handled here; not ours (the lease moved) → the sender routes it again.
    const direct: RequestHandler<M, typeof Ack> = async (msg, subj) => {
      if (!(await this.router.route(hostOf(msg))).mine) throw new CyborgError('lease.not_owner', `host ${hostOf(msg)} is not held by conductor ${this.me}`);
      await handler(msg, subj);
      return { ok: true as const };
    };
    const offs = [this.inner.subscribe(subject, schema, routed, opts), this.inner.respond(Subjects.conductorForward(this.me, kind), schema, Ack, direct)];
    return () => offs.forEach((o) => o());
  }

  respond<Req extends TSchema, Rep extends TSchema>(
    subject: string,
    reqSchema: Req,
    repSchema: Rep,
    handler: RequestHandler<Req, Rep>,
    opts?: SubscribeOptions,
  ): Unsubscribe {
    const kind = KINDS[subject];
    if (!kind) return this.inner.respond(subject, reqSchema, repSchema, handler, opts);
    const routed: RequestHandler<Req, Rep> = async (msg, subj, written) => {
      if (!this.fromItsHost(subj, msg))
        throw new CyborgError('bus.invalid_message', `a report for host ${hostOf(msg)} must come on that host's subject, not ${subj}`);
      const r = await this.router.route(hostOf(msg));
      if (r.mine) return handler(msg, subj, written);
      if (!r.owner) throw new CyborgError('lease.not_owner', `no conductor holds host ${hostOf(msg)}`);
      return this.inner.request(Subjects.conductorForward(r.owner, kind), reqSchema, repSchema, msg, { timeoutMs: this.timeoutMs });
    };
    const direct: RequestHandler<Req, Rep> = async (msg, subj, written) => {
      if ((await this.router.route(hostOf(msg))).mine) return handler(msg, subj, written);
      throw new CyborgError('lease.not_owner', `host ${hostOf(msg)} is not held by conductor ${this.me}`);
    };
    const offs = [
      this.inner.respond(subject, reqSchema, repSchema, routed, opts),
      this.inner.respond(Subjects.conductorForward(this.me, kind), reqSchema, repSchema, direct),
    ];
    return () => offs.forEach((o) => o());
  }

  close(): Promise<void> {
    this.closing = true;
    return this.inner.close();
  }

  private fromItsHost(subject: string, msg: unknown): boolean {
    return reportFromItsHost(subject, msg as { host: string }, this.conductor.reportStats(), this.log);
  }
}

function hostOf(msg: unknown): string {
  return (msg as { host: string }).host;
}
