import type { Logger } from 'pino';
import type { AcceleratorEvent } from '../../machines/index.js';
import type { AcceleratorView, RequestMeta } from '../../model/index.js';
import { assertNotAllocated, type PlacementPort } from '../services/index.js';
import type { Supervisor } from './supervisor.js';

export interface AcceleratorDeskOptions {
  tree: Supervisor;
  log: Logger;
  /**
   * How long a write waits for its driver operation before it is answered under way, in its
   * committed `…ing` state (the api's 202): below the api → conductor timeout, so that a slow
   * agent (restarting, loaded) never turns an operation that goes on into an api's 503.
   */
  answerWithinMs: number;
  /** The Placement sync beside the conductor, where one runs: its allocations guard operator events. */
  placement?: PlacementPort;
  /** Marks the ARQ bound through a released instance failed (this conductor's ARQ desk, or the ARQ home). */
  arqReleased: (arqUuid: string, reason: string, meta: RequestMeta) => Promise<boolean>;
}

/**
 * The conductor's accelerator writes, as an operator asks them: lifecycle events, an attach
 * without an ARQ, a detach. Each resolves once its change is committed.
 */
export class AcceleratorDesk {
  private readonly within: { settleWithinMs: number };

  constructor(private readonly o: AcceleratorDeskOptions) {
    this.within = { settleWithinMs: o.answerWithinMs };
  }

  async act(id: string, event: AcceleratorEvent, meta: RequestMeta = {}): Promise<AcceleratorView> {
    this.o.tree.assertRunning();
    const actor = this.o.tree.acceleratorActor(id);
    await assertNotAllocated(this.o.placement?.allocations ?? null, { id, rpUuid: actor.rpUuid }, event.type);
    if (event.type !== 'RELEASE') return actor.request(event, meta, this.within);
    // The ARQ the instance was bound through, if any, becomes a failed bind once the card let it go.
    const arqUuid = actor.context.allocations.find((a) => a.instanceUuid === event.instanceUuid)?.arqUuid;
    const state = actor.state;
    const view = await actor.request(event, meta);
    await this.freeInPlacement(event.instanceUuid, actor.rpUuid, view.name);
    if (arqUuid) {
      const reason = `accelerator ${view.name} (${state}) released instance ${event.instanceUuid} by ${meta.actorName ?? meta.actor ?? 'an operator'}`;
      await this.o.arqReleased(arqUuid, reason, meta);
    }
    return view;
  }

  /**
   * A released instance's allocation on the dead card's provider is freed in Placement (the rest
   * of the instance's allocation stays). The release itself is committed already: Placement
   * unreachable leaves the allocation for the operator (logged), it does not undo the release.
   */
  private async freeInPlacement(instanceUuid: string, rpUuid: string, name: string): Promise<void> {
    const release = this.o.placement?.releaseConsumer;
    if (!release) return;
    try {
      const freed = await release(instanceUuid, rpUuid);
      this.o.log.info(
        { instanceUuid, rpUuid, accelerator: name, freed },
        freed ? "released instance's allocation on the card freed in Placement" : 'released instance held nothing on the card in Placement',
      );
    } catch (err) {
      this.o.log.warn(
        { err, instanceUuid, rpUuid, accelerator: name },
        "could not free the released instance's allocation on the card in Placement; remove it there (openstack resource provider allocation …)",
      );
    }
  }

  /** Attaches an instance to the first free attach handle (the operator's attach, without an ARQ). */
  attach(id: string, req: { instanceUuid: string; projectId?: string }, meta: RequestMeta = {}): Promise<AcceleratorView> {
    this.o.tree.assertRunning();
    const actor = this.o.tree.acceleratorActor(id);
    const handleUuid = actor.freeHandle() ?? '';
    return actor.request(
      { type: 'ATTACH', handleUuid, instanceUuid: req.instanceUuid, ...(req.projectId ? { projectId: req.projectId } : {}) },
      meta,
      this.within,
    );
  }

  detach(id: string, req: { handleUuid?: string; instanceUuid?: string }, meta: RequestMeta = {}): Promise<AcceleratorView> {
    this.o.tree.assertRunning();
    const actor = this.o.tree.acceleratorActor(id);
    const allocs = actor.context.allocations;
    const alloc = req.handleUuid
      ? allocs.find((a) => a.handleUuid === req.handleUuid)
      : req.instanceUuid
        ? allocs.find((a) => a.instanceUuid === req.instanceUuid)
        : allocs[0];
    return actor.request({ type: 'DETACH', handleUuid: alloc?.handleUuid ?? req.handleUuid ?? '' }, meta, this.within);
  }
}
