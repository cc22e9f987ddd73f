import type { Bus } from '../bus/index.js';
import { Subjects } from '../bus/index.js';
import { CyborgError, isCyborgError, NotFoundError } from '../errors/index.js';
import type { ArqHold, Binding, BoundTo, RequestMeta } from '../model/index.js';
import { callConductor } from './client.js';
import { forwardedBudget } from './deadline.js';

/** What routing a bind needs of the lease table: who holds a host, who is alive. */
export interface LeaseView {
  ownerOf(host: string): string | undefined;
  liveConductors(): string[];
  /** Whether the host still has a lease record (held or lapsed), i.e. it is not gone. */
  recorded(host: string): boolean;
}

/** The ARQ binder's effects on accelerators another conductor holds (actors/conductor/arq-binder.ts's RemoteArqOps). */
export interface RemoteArqCalls {
  attach(arqUuid: string, b: Binding): Promise<BoundTo>;
  release(arqUuid: string, boundTo: BoundTo | null): Promise<void>;
  /** The ARQ home's answer: each ARQ's state and held handle, null for one that does not exist. */
  holds(uuids: readonly string[]): Promise<Record<string, ArqHold | null>>;
  /** Tells the ARQ home that an operator released `arqUuid`'s instance from its card (RELEASE). */
  released(arqUuid: string, reason: string, meta: RequestMeta): Promise<boolean>;
}

/**
 * The ARQ home's binds to accelerators of other conductors, as control calls (`arqAttach`,
 * `arqRelease`) to the conductor that holds them: an attach goes to the lease holder of the host
 * Nova names, a release to the lease holder of the host the ARQ is bound on (or, when no live
 * conductor holds that host, to every other live conductor). Both answer once their side is
 * committed. It is the client half of the calls control/responder.ts serves, hence here.
 */
export function remoteArqCalls(
  bus: Bus,
  lease: LeaseView,
  self: string,
  timeoutMs: number,
  hostOfArq: (uuid: string) => string | undefined,
  o: {
    /** Whether a host of ours is still being rebuilt after a claim (Conductor.hostPending). */
    rebuilding?: (host: string) => boolean;
    /** Whether this conductor holds the host's actors (a lease of our name but no actors: a previous incarnation's, not claimed yet). */
    adopted?: (host: string) => boolean;
    /**
     * Releases a handle on this conductor's own accelerators (ArqBinder.unbind, local): a release
     * that waited out a takeover of the host by this conductor ends here, once it is rebuilt.
     */
    releaseHere?: (arqUuid: string, boundTo: BoundTo) => Promise<void>;
    /** The same for a bind: attaches on this conductor's own accelerators (ArqBinder.bind, local). */
    attachHere?: (arqUuid: string, b: Binding) => Promise<BoundTo>;
    /** How long a bind waits for a host between conductors to find its new one (a lease TTL and a rebuild). */
    takeoverWaitMs?: number;
  } = {},
): RemoteArqCalls {
  const attachOn = (conductor: string, arqUuid: string, binding: Binding): Promise<BoundTo> =>
    // The host rides along so that a conductor that has just taken it over serves the call only
    // once the host's actors are rebuilt (the responder's `settled`), not against an empty tree.
    callConductor(
      bus,
      Subjects.conductorApiOf(conductor),
      'arqAttach',
      { arqUuid, binding },
      { timeoutMs, forwarded: true, host: binding.hostname, caller: 'conductor', budgetMs: forwardedBudget(timeoutMs) },
    );
  const releaseOn = (conductor: string, arqUuid: string, boundTo: BoundTo | null, asOwner: boolean, host?: string): Promise<boolean> =>
    callConductor(
      bus,
      Subjects.conductorApiOf(conductor),
      'arqRelease',
      { arqUuid, boundTo, asOwner },
      { timeoutMs, forwarded: true, caller: 'conductor', ...(host ? { host } : {}), budgetMs: forwardedBudget(timeoutMs) },
    );
  const attachOnce = async (arqUuid: string, b: Binding): Promise<BoundTo> => {
    const owner = lease.ownerOf(b.hostname);
    if (owner && owner !== self) return await attachOn(owner, arqUuid, b);
    // Ours, yet the binder found no accelerator here: the host is still being rebuilt after a claim.
    if (owner === self && (o.rebuilding?.(b.hostname) || o.adopted?.(b.hostname) === false)) {
      throw new CyborgError('lease.not_owner', `host ${b.hostname} is being taken over here; the bind waits for it`, { host: b.hostname });
    }
    // Ours and rebuilt now (it was being taken over when the bind began): attached here, unless
    // the deployable is not on it after all (Nova's hostname for another host: asked below).
    if (owner === self && o.attachHere) {
      try {
        return await o.attachHere(arqUuid, b);
      } catch (err) {
        if (!isCyborgError(err) || err.code !== 'accelerator.not_found') throw err;
      }
    }
    // A host with a lease record that no live conductor holds: its holder stopped and gave it
    // back (a restart) or died, and the takeover has not claimed it yet. Waited out, not failed.
    if (!owner && lease.recorded(b.hostname)) {
      throw new CyborgError('lease.not_owner', `host ${b.hostname} is between conductors; the bind waits for its new holder`, { host: b.hostname });
    }
    // Nova's hostname names no host we know (another spelling of it?): ask every other
    // conductor; only the one holding the deployable can attach it.
    let last: unknown = new NotFoundError('host.not_found', b.hostname);
    for (const c of lease.liveConductors().filter((x) => x !== self)) {
      try {
        return await attachOn(c, arqUuid, b);
      } catch (err) {
        last = err;
      }
    }
    throw last;
  };
  return {
    // A host between conductors (its holder died, its lease not lapsed or just claimed) is
    // waited for, as Nova waits for the bind: a failover must not fail the boots under way.
    attach: (arqUuid, b) => waitingOutTakeovers(() => attachOnce(arqUuid, b)),
    // On the shared subject: whichever conductor hears it forwards it to the ARQ home.
    holds: (uuids) => callConductor(bus, Subjects.conductorApi, 'arqHolds', { uuids: [...uuids] }, { timeoutMs, caller: 'conductor' }),
    released: (arqUuid, reason, meta) =>
      callConductor(bus, Subjects.conductorApi, 'arqReleased', { arqUuid, reason, meta }, { timeoutMs, caller: 'conductor' }),
    release: (arqUuid, boundTo) => waitingOutTakeovers(() => releaseOnce(arqUuid, boundTo)),
  };

  async function releaseOnce(arqUuid: string, boundTo: BoundTo | null): Promise<void> {
    const host = hostOfArq(arqUuid);
    const owner = host ? lease.ownerOf(host) : undefined;
    if (owner === self) {
      // Ours, but not rebuilt here yet (just taken over): the handle is in the host's records,
      // not in its actors. Answered now, it would stay held for good; the release waits for it.
      if (host && (o.rebuilding?.(host) || o.adopted?.(host) === false))
        throw new CyborgError('lease.not_owner', `host ${host} is being taken over here; the release waits for it`, { host });
      // Ours and rebuilt now (it was being taken over when the release began): released here.
      if (host && boundTo && o.releaseHere) return o.releaseHere(arqUuid, boundTo);
      // Our own host, rebuilt, yet the accelerator is not here: it is gone, and its handle with it.
      return;
    }
    if (owner) {
      await releaseOn(owner, arqUuid, boundTo, true, host);
      return;
    }
    const answers = await Promise.all(
      lease
        .liveConductors()
        .filter((c) => c !== self)
        .map((c) => releaseOn(c, arqUuid, boundTo, false)),
    );
    if (answers.includes(true) || !boundTo) return;
    // A recorded handle that no live conductor holds, on a host whose lease is still recorded:
    // the host is between owners (a takeover). Unbinding now would leave the handle taken for
    // good; the caller retries instead. (A host with no lease record at all is gone.)
    if (!host || lease.recorded(host)) {
      throw new CyborgError('lease.not_owner', `no live conductor holds accelerator ${boundTo.acceleratorId} right now; retry the unbind`, {
        acceleratorId: boundTo.acceleratorId,
      });
    }
  }

  /** Runs `op` again while its host is between conductors (see betweenOwners), up to the takeover wait. */
  async function waitingOutTakeovers<T>(op: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + (o.takeoverWaitMs ?? 4 * timeoutMs);
    for (let pause = 100; ; pause = Math.min(pause * 2, 1_000)) {
      try {
        return await op();
      } catch (err) {
        if (!betweenOwners(err) || Date.now() + pause > deadline) throw err;
        await new Promise((r) => setTimeout(r, pause));
      }
    }
  }
}

/** A failure that says the host is between conductors, not that the bind is wrong: worth waiting out. */
function betweenOwners(err: unknown): boolean {
  return isCyborgError(err) && (err.code === 'bus.no_responder' || err.code === 'lease.not_owner' || err.code === 'lease.lost');
}
