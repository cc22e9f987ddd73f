import { randomUUID } from 'node:crypto';
import { ArqStates, type Binding, type BoundTo } from '../../machines/index.js';
import type { ArqHold, ArqView, RequestMeta } from '../../model/index.js';
import type { DocumentStore } from '../services/index.js';
import type { Supervisor } from './supervisor.js';

export interface ArqDeskOptions {
  tree: Supervisor;
  documents: DocumentStore;
  /** How long a bind, unbind or delete waits for its attach or release before answering with the committed intent. */
  releaseWaitMs: number;
}

/**
 * The conductor's ARQ writes: what Nova asks (create, bind, unbind, delete), what the ARQ home
 * asks of the conductor holding a device (attach, release), and an operator's release of a dead
 * card's instance. Each resolves once its change is committed.
 */
export class ArqDesk {
  constructor(private readonly o: ArqDeskOptions) {}

  async create(req: { deviceProfileName: string; deviceProfileGroupId: number; projectId: string | null }, meta: RequestMeta = {}): Promise<ArqView> {
    this.o.tree.assertRunning();
    const arq = this.o.tree.spawnArq({ uuid: randomUUID(), ...req });
    await arq.announceCreated(meta);
    return arq.view();
  }

  /**
   * Durable intent, as Cyborg's PATCH is (202, then Nova polls): answered once `BindStarted` is
   * committed, with the outcome if the attach ends within the wait. A bind held up longer (its
   * agent restarting, a host being taken over) must not answer 503 for a bind that goes on and
   * lands: Nova would retry a bind already under way and fail the boot.
   */
  bind(uuid: string, binding: Binding, meta: RequestMeta = {}): Promise<ArqView> {
    this.o.tree.assertRunning();
    const arq = this.o.tree.arqActor(uuid);
    const { program: _ignored, ...asked } = binding;
    const program = this.o.documents.programOf(arq.view());
    return arq.request({ type: 'BIND', ...asked, ...(program ? { program } : {}) }, meta, { settleWithinMs: this.o.releaseWaitMs });
  }

  /** Durable intent: answered once `Unbinding` is committed, if the release takes longer (see Rounds). */
  unbind(uuid: string, meta: RequestMeta = {}): Promise<ArqView> {
    this.o.tree.assertRunning();
    return this.o.tree.arqActor(uuid).request({ type: 'UNBIND' }, meta, { settleWithinMs: this.o.releaseWaitMs });
  }

  /**
   * Durable intent: answered once `Deleting` is committed — `Deleted` if the release finished
   * meanwhile, else `Deleting` (or `DeletePending`), which the rounds take to `Deleted`.
   * Deleting an ARQ already on its way out tries its release again.
   */
  async delete(uuid: string, meta: RequestMeta = {}): Promise<ArqView> {
    this.o.tree.assertRunning();
    const arq = this.o.tree.arqActor(uuid);
    if (arq.state === ArqStates.Deleting) return arq.view();
    const view = await arq.request({ type: 'DELETE' }, meta, { settleWithinMs: this.o.releaseWaitMs });
    if (view.state === ArqStates.Deleted) this.o.tree.forgetArq(arq);
    return view;
  }

  /**
   * The ARQ home's bind, run here because this conductor holds the accelerator: resolves once
   * the attach is committed (the home's ARQ commit goes through another journal).
   */
  async attachFor(arqUuid: string, binding: Binding): Promise<BoundTo> {
    this.o.tree.assertRunning();
    const bound = await this.o.tree.binder.bind(arqUuid, binding, true);
    await this.o.tree.acceleratorActor(bound.acceleratorId).flushed();
    return bound;
  }

  /**
   * The ARQ home's unbind, run here: true once one of our accelerators has released the handle
   * and that is committed; false if none of ours holds it — unless we were asked as the holder of
   * the device's host (`asOwner`): then an accelerator that is gone has nothing left to release.
   */
  async releaseFor(arqUuid: string, boundTo: BoundTo | null, asOwner = false): Promise<boolean> {
    this.o.tree.assertRunning();
    const held = boundTo ?? this.o.tree.heldBy(arqUuid);
    const actor = held ? this.o.tree.findAccelerator(held.acceleratorId) : undefined;
    if (!held || !actor) return asOwner;
    await this.o.tree.binder.unbind(arqUuid, held, true);
    await actor.flushed();
    return true;
  }

  /** A bound ARQ whose instance an operator released from its card: BindFailed, as Nova reads it (false: not bound here). */
  async released(arqUuid: string, reason: string, meta: RequestMeta = {}): Promise<boolean> {
    const arq = this.o.tree.arqs.get(arqUuid);
    if (arq?.state !== ArqStates.Bound) return false;
    await arq.request({ type: 'RELEASED', reason }, meta);
    return true;
  }

  holds(uuids: readonly string[]): Record<string, ArqHold | null> {
    return this.o.tree.arqHolds(uuids);
  }
}
