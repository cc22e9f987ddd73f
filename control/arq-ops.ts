import type { Bus } from '../bus/bus.js';
import { Subjects } from '../bus/subjects.js';
import { CyborgError, NotFoundError } from '../errors/index.js';
import type { Binding, BoundTo } from '../model/index.js';
import { callConductor } from './client.js';

/** What routing a bind needs of the lease table: who holds a host, who is alive. */
export interface LeaseView {
  ownerOf(host: string): string | undefined;
  liveConductors(): string[];
  /** Whether the host still has a lease record (held or lapsed), i.e. it is not gone. */
  recorded(host: string): boolean;
}

/** The ARQ binder's effects on accelerators another conductor holds (actors/arq-binder.ts's RemoteArqOps). */
export interface RemoteArqCalls {
  attach(arqUuid: string, b: Binding): Promise<BoundTo>;
  release(arqUuid: string, boundTo: BoundTo | null): Promise<void>;
}

/**
 * The ARQ home's binds to accelerators of other conductors, as control calls (`arqAttach`,
 * `arqRelease`) to the conductor that holds them: an attach goes to the lease holder of the host
 * Nova names, a release to the lease holder of the host the ARQ is bound on (or, when no live
 * conductor holds that host, to every other live conductor). Both answer once their side is
 * committed. It is the client half of the calls control/responder.ts serves, hence here.
 */
export function remoteArqCalls(
  bus: Bus, lease: LeaseView, self: string, timeoutMs: number, hostOfArq: (uuid: string) => string | undefined,
): RemoteArqCalls {
  const attachOn = (conductor: string, arqUuid: string, binding: Binding): Promise<BoundTo> =>
    callConductor(bus, Subjects.conductorApiOf(conductor), 'arqAttach', { arqUuid, binding }, { timeoutMs, forwarded: true });
  const releaseOn = (conductor: string, arqUuid: string, boundTo: BoundTo | null, asOwner: boolean): Promise<boolean> =>
    callConductor(bus, Subjects.conductorApiOf(conductor), 'arqRelease', { arqUuid, boundTo, asOwner }, { timeoutMs, forwarded: true });
  return {
    attach: async (arqUuid, b) => {
      const owner = lease.ownerOf(b.hostname);
      if (owner && owner !== self) return await attachOn(owner, arqUuid, b);
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
    },
    release: async (arqUuid, boundTo) => {
      const host = hostOfArq(arqUuid);
      const owner = host ? lease.ownerOf(host) : undefined;
      // Our own host, yet the accelerator is not here: it is gone, and its handle with it.
      if (owner === self) return;
      if (owner) {
        await releaseOn(owner, arqUuid, boundTo, true);
        return;
      }
      const answers = await Promise.all(lease.liveConductors().filter((c) => c !== self).map((c) => releaseOn(c, arqUuid, boundTo, false)));
      if (answers.includes(true) || !boundTo) return;
      // A recorded handle that no live conductor holds, on a host whose lease is still recorded:
      // the host is between owners (a takeover). Unbinding now would leave the handle taken for
      // good; the caller retries instead. (A host with no lease record at all is gone.)
      if (!host || lease.recorded(host)) {
        throw new CyborgError('lease.not_owner', `no live conductor holds accelerator ${boundTo.acceleratorId} right now; retry the unbind`, { acceleratorId: boundTo.acceleratorId });
      }
    },
  };
}
