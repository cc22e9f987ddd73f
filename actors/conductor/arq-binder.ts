import type { Logger } from 'pino';
import type { Binding, BoundTo } from '../../machines/index.js';
import { whyUnavailable, type AcceleratorView, type ArqHold, type RequestMeta } from '../../model/index.js';
import type { AcceleratorActor } from './accelerator-actor.js';
import { AcceleratorStates } from '../../machines/index.js';
import { CyborgError } from '../../errors/index.js';

export interface ArqBinderDeps {
  /** The accelerator whose Placement resource provider is `rpUuid`. */
  byRp(rpUuid: string): AcceleratorActor | undefined;
  /** The accelerator `id`; throws when it is gone. */
  byId(id: string): AcceleratorActor;
  /** Whether this conductor holds the accelerator. */
  has(id: string): boolean;
  /** Where an ARQ holds a handle according to the accelerators themselves (after an interrupted bind). */
  heldBy(arqUuid: string): BoundTo | undefined;
  /**
   * Accelerators of other conductors (several conductors: this one is the ARQ home, the device's
   * host is leased by another). Absent with one conductor.
   */
  remote?: RemoteArqOps;
  log: Logger;
}

/** The binder's effects run by the conductor that holds the accelerator, for the ARQ home. */
export interface RemoteArqOps {
  /** Attaches a free handle of the deployable `b.deviceRpUuid` on host `b.hostname`, committed. */
  attach(arqUuid: string, b: Binding): Promise<BoundTo>;
  /** Releases what `arqUuid` holds (found by the accelerators when `boundTo` is null), committed. */
  release(arqUuid: string, boundTo: BoundTo | null): Promise<void>;
  /** The ARQ home's answer for these ARQs: state and held handle, null for one that is gone. */
  holds(uuids: readonly string[]): Promise<Record<string, ArqHold | null>>;
  /** The ARQ home marks a bound ARQ failed: its instance was released from a dead card. */
  released(arqUuid: string, reason: string, meta: RequestMeta): Promise<boolean>;
}

/**
 * The effects of the ARQ machine: binding takes the first free attach handle of the deployable
 * Nova chose (by its resource provider) and attaches it; unbinding detaches it. Attaches and
 * detaches of one accelerator run one at a time, in arrival order.
 */
export class ArqBinder {
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: ArqBinderDeps) {}

  /** `local`: this conductor's accelerators only (a call from the ARQ home). */
  bind(arqUuid: string, b: Binding, local = false): Promise<BoundTo> {
    const actor = this.deps.byRp(b.deviceRpUuid);
    if (!actor) {
      if (this.deps.remote && !local) return this.deps.remote.attach(arqUuid, b);
      return Promise.reject(new CyborgError('accelerator.not_found', `no deployable has resource provider ${b.deviceRpUuid}`));
    }
    return this.exclusive(actor.id, () => this.attachFreeHandle(actor, arqUuid, b));
  }

  /**
   * Releases the handle an ARQ holds. Without a recorded one (a bind that failed, or one a crash
   * interrupted after the accelerator took the handle but before the ARQ recorded it), the
   * accelerators are asked whether one of them still holds a handle for this ARQ.
   */
  unbind(arqUuid: string, boundTo: BoundTo | null, local = false, meta: RequestMeta = { actor: `arq:${arqUuid}` }): Promise<void> {
    const held = boundTo ?? this.deps.heldBy(arqUuid);
    // Not one of ours (or nothing here holds it): the conductor holding the accelerator releases it.
    if ((!held || !this.deps.has(held.acceleratorId)) && this.deps.remote && !local) return this.deps.remote.release(arqUuid, held ?? null);
    if (!held) return Promise.resolve();
    return this.exclusive(held.acceleratorId, () => this.detachHandle(held, meta));
  }

  /**
   * Runs `fn` after every earlier ARQ attach/detach of this accelerator: several ARQs bound to
   * one deployable at once (one PATCH with `resources:FPGA=2`, or concurrent Nova builds) must
   * queue for its handles, not fail because the machine is busy attaching the previous one.
   */
  private exclusive<T>(acceleratorId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(acceleratorId) ?? Promise.resolve();
    const run = prev.catch(() => undefined).then(fn);
    const tail = run.catch(() => undefined);
    this.locks.set(acceleratorId, tail);
    void tail.then(() => {
      if (this.locks.get(acceleratorId) === tail) this.locks.delete(acceleratorId);
    });
    return run;
  }

  // Neither waits for the accelerator's own commit: the ARQ's later commit, which is what gets
  // acknowledged, covers it (the journal commits in order).
  private async attachFreeHandle(actor: AcceleratorActor, arqUuid: string, b: Binding): Promise<BoundTo> {
    if (actor.host !== b.hostname) {
      this.deps.log.warn({ arqUuid, hostname: b.hostname, host: actor.host }, "bind hostname differs from the deployable's host");
    }
    // Nova's BindFailed carries this reason: it names the drain, the mark, the quarantine or the
    // handles held, and the way out, rather than the machine's "not allowed in state ready".
    const refused = whyUnavailable(actor.view(), actor.freeHandle() !== undefined);
    if (refused) throw new CyborgError('arq.bind_failed', refused);
    if (b.program) await this.programFirst(actor, arqUuid, b.program);
    const handleUuid = b.handleUuid === undefined ? actor.freeHandle() : pinned(actor, b.handleUuid);
    if (!handleUuid) throw new CyborgError('accelerator.no_free_handle', `deployable ${actor.deployable.name} has no free attach handle`);
    const view = await actor.request(
      {
        type: 'ATTACH',
        handleUuid,
        instanceUuid: b.instanceUuid,
        arqUuid,
        ...(b.projectId ? { projectId: b.projectId } : {}),
      },
      { actor: `arq:${arqUuid}` },
      { awaitCommit: false },
    );
    if (!view.allocations.some((a) => a.handleUuid === handleUuid)) {
      throw new CyborgError('arq.bind_failed', view.error?.reason ?? `attach of ${actor.id} failed`);
    }
    return { acceleratorId: actor.id, handleUuid };
  }

  /**
   * Programs what the device profile asks for before the attach, as Cyborg binds an FPGA: the
   * bind succeeds only once the card runs the image; a failure (fetch, checksum, the tool) leaves
   * the driver's rollback in place and fails the bind with the driver's reason. A card already
   * running that image is not programmed again.
   */
  private async programFirst(actor: AcceleratorActor, arqUuid: string, want: NonNullable<Binding['program']>): Promise<void> {
    if (want.bitstreamId && want.functionId) {
      throw new CyborgError(
        'request.invalid',
        `the device profile group sets both accel:bitstream_id (${want.bitstreamId}) and accel:function_id (${want.functionId}): only one may be set`,
      );
    }
    const runs = (p: AcceleratorView['program']): boolean =>
      !!p && (!want.bitstreamId || p.bitstreamId === want.bitstreamId) && (!want.functionId || p.functionId === want.functionId);
    if (runs(actor.view().program)) return;
    const view = await actor.request({ type: 'PROGRAM', ...want }, { actor: `arq:${arqUuid}` }, { awaitCommit: false });
    // A failed programming that left the card on its previous image is back in service: not ours.
    if (view.state !== AcceleratorStates.programmed || !runs(view.program)) {
      throw new CyborgError(
        'arq.bind_failed',
        `programming ${want.bitstreamId ? `bitstream ${want.bitstreamId}` : `function ${want.functionId}`} failed: ${view.error?.reason ?? `the accelerator is ${view.state}`}`,
      );
    }
  }

  private async detachHandle(boundTo: BoundTo, meta: RequestMeta): Promise<void> {
    let actor: AcceleratorActor;
    try {
      actor = this.deps.byId(boundTo.acceleratorId);
    } catch {
      return; // the accelerator is gone: nothing left to release
    }
    const holds = (): boolean => actor.context.allocations.some((a) => a.handleUuid === boundTo.handleUuid);
    if (!holds()) return;
    // A detach that failed before (agent away, timed out) left the accelerator in `error` holding
    // the handle: run that detach again rather than leave it there (it may be another ARQ's handle).
    if (actor.state === AcceleratorStates.error && actor.context.error?.op === 'detach') {
      const view = await actor.request({ type: 'RETRY' }, meta, { awaitCommit: false });
      if (view.state === AcceleratorStates.error) throw new CyborgError('driver.failed', view.error?.reason ?? `detach of ${actor.id} failed again`);
      if (!holds()) return;
    }
    if (actor.state === AcceleratorStates.offline)
      throw new CyborgError('host.offline', `the host of accelerator ${actor.id} is away: released when it is back`);
    const view = await actor.request({ type: 'DETACH', handleUuid: boundTo.handleUuid }, meta, { awaitCommit: false });
    if (view.state === AcceleratorStates.error) throw new CyborgError('driver.failed', view.error?.reason ?? `detach of ${actor.id} failed`);
  }
}

/** The handle a binding names, when the deployable has it and nobody holds it. */
function pinned(actor: AcceleratorActor, handleUuid: string): string {
  if (!actor.deployable.attachHandles.some((h) => h.uuid === handleUuid))
    throw new CyborgError('arq.bind_failed', `deployable ${actor.deployable.name} has no attach handle ${handleUuid}`);
  const holder = actor.context.allocations.find((a) => a.handleUuid === handleUuid);
  if (holder)
    throw new CyborgError('accelerator.no_free_handle', `attach handle ${handleUuid} of ${actor.deployable.name} is held by instance ${holder.instanceUuid}`);
  return handleUuid;
}
