import type { Logger } from 'pino';
import type { HostObservationMsg } from '../../bus/index.js';
import type { Journal } from '../runtime/index.js';
import type { HostActor } from './host-actor.js';
import { planRejoin, type HeldHandle, type RejoinStep } from './rejoin-plan.js';
import type { ArqHold, DeviceT, EventHub, TransitionRecord } from '../../model/index.js';
import { AcceleratorStates, ArqStates } from '../../machines/index.js';

export interface RejoinOptions {
  log: Logger;
  journal: Journal;
  hub: EventHub;
  /** Each ARQ's state, from the ARQ home (null: no such ARQ). */
  holds(uuids: readonly string[]): Promise<Record<string, ArqHold | null>>;
  /**
   * Records a handle a running guest holds as its instance's: a Bound ARQ naming that handle, as
   * an operator's attach makes one, so Nova finds it when it rebuilds the guest. Absent: guests
   * are not adopted.
   */
  adopt?(held: HeldHandle): Promise<void>;
}

/** What one comparison did, by attach handle (and card, for a layout applied again). */
export interface RejoinOutcome {
  host: string;
  agentId: string;
  restored: string[];
  relaidOut: string[];
  flagged: { acceleratorId: string; handleUuid: string; reason: string }[];
  /** Handles adopted for the running guests that hold them. */
  adopted: string[];
}

const ACTOR = { actor: 'conductor' } as const;

/**
 * Reboot and re-join reconciliation, on the conductor: the first report of each agent session
 * (a restart, a re-imaged host whose cache is gone, a conductor that just took the host) is
 * compared with what instances hold. A handle whose host side is gone is made again by its driver
 * (`restore`, with an idempotency key of that session); a card that lost the MIG layout or VF
 * count its held deployables came from gets it again first. What cannot be brought back — the
 * device is gone, the driver refuses — is flagged on the accelerator (a fatal health condition
 * with the reason, audited as `conductor`, reserved in Placement); the instance is never
 * detached here: that is the operator's or Nova's call.
 */
export class Rejoin {
  /** The agent session each host was last compared for. */
  private readonly compared = new Map<string, string>();
  private readonly running = new Map<string, Promise<RejoinOutcome>>();

  constructor(private readonly opts: RejoinOptions) {}

  /**
   * Compares once per agent session, after its report was applied (`recorded`: the inventory
   * before it). Resolves with what was done; undefined when this session was compared already.
   */
  compare(host: HostActor, agentId: string, recorded: readonly DeviceT[], observed: HostObservationMsg): Promise<RejoinOutcome> | undefined {
    if (this.compared.get(host.name) === agentId) return undefined;
    this.compared.set(host.name, agentId);
    const before = this.running.get(host.name) ?? Promise.resolve(undefined);
    const run = before.catch(() => undefined).then(() => this.run(host, agentId, recorded, observed));
    this.running.set(host.name, run);
    void run
      .finally(() => {
        if (this.running.get(host.name) === run) this.running.delete(host.name);
      })
      .catch(() => undefined);
    return run;
  }

  /** The host left this conductor (or its actor was rebuilt): its next session is compared anew. */
  forget(host: string): void {
    this.compared.delete(host);
  }

  private async run(host: HostActor, agentId: string, recorded: readonly DeviceT[], observed: HostObservationMsg): Promise<RejoinOutcome> {
    const out: RejoinOutcome = { host: host.name, agentId, restored: [], relaidOut: [], flagged: [], adopted: [] };
    const held = await this.held(host);
    if (held.length === 0 && !observed.guests?.length) return out;
    const steps = planRejoin({ held, recorded, devices: host.inventory(), observed });
    for (const step of steps) await this.runStep(host, agentId, step, out);
    if (out.restored.length + out.relaidOut.length + out.flagged.length + out.adopted.length > 0) {
      this.opts.log.info(
        { host: host.name, agentId, restored: out.restored.length, relaidOut: out.relaidOut, flagged: out.flagged.length, adopted: out.adopted.length },
        're-join reconciliation: what a reboot lost was re-applied or flagged, what running guests hold adopted',
      );
    }
    return out;
  }

  /** Handles held on attached accelerators for ARQs that are Bound (or by an operator's attach, without one). */
  private async held(host: HostActor): Promise<HeldHandle[]> {
    const all: HeldHandle[] = [];
    for (const a of host.accelerators.values()) {
      if (a.state !== AcceleratorStates.attached) continue;
      for (const x of a.context.allocations)
        all.push({ acceleratorId: a.id, handleUuid: x.handleUuid, instanceUuid: x.instanceUuid, ...(x.arqUuid ? { arqUuid: x.arqUuid } : {}) });
    }
    const arqs = all.flatMap((h) => (h.arqUuid ? [h.arqUuid] : []));
    if (arqs.length === 0) return all;
    try {
      const states = await this.opts.holds(arqs);
      // An ARQ that is gone or on its way out is the orphan sweep's and the unbind's business.
      return all.filter((h) => !h.arqUuid || states[h.arqUuid]?.state === ArqStates.Bound);
    } catch (err) {
      // The ARQ home does not answer: re-making a handle an unbinding ARQ then releases costs
      // nothing; leaving a running instance without its device does.
      this.opts.log.warn({ err, host: host.name }, 're-join reconciliation could not ask the ARQ home; every held handle is checked');
      return all;
    }
  }

  private async runStep(host: HostActor, agentId: string, step: RejoinStep, out: RejoinOutcome): Promise<void> {
    if (step.kind === 'flag') return this.flag(host, step.held, step.reason, out);
    if (step.kind === 'restore') return this.restore(host, agentId, step.held, out);
    if (step.kind === 'adopt') return this.adopt(host, step.held, out);
    const { layout, address } = step;
    const params = layout.kind === 'mig' ? { address, profiles: layout.profiles, session: agentId } : { address, count: layout.count, session: agentId };
    const op = layout.kind === 'mig' ? 'mig_layout' : 'vf_count';
    try {
      await host.runOp({ op, params, id: step.held[0]!.acceleratorId, host: host.name, seq: 0 }, step.driver);
    } catch (err) {
      const reason = `the card ${address} lost its ${layout.kind === 'mig' ? 'MIG layout' : 'VF count'} after the host re-joined and it could not be applied again: ${(err as Error).message}`;
      for (const h of step.held) this.flag(host, h, reason, out);
      return;
    }
    out.relaidOut.push(address);
    const args: Record<string, string | number> = layout.kind === 'mig' ? { address, profiles: layout.profiles.join(',') } : { address, count: layout.count };
    await this.audit({
      kind: 'host',
      id: host.name,
      host: host.name,
      event: layout.kind === 'mig' ? 'APPLY_MIG_LAYOUT' : 'SET_VF_COUNT',
      from: host.state,
      to: host.state,
      at: new Date().toISOString(),
      reason: 'lost in a reboot: applied again for the instances that hold its devices',
      args,
      ...ACTOR,
    });
    // The agent reported the card anew before it answered: its deployables are back, or not.
    const now = new Map(host.inventory().flatMap((d) => d.deployables.map((dep) => [dep.uuid, dep] as const)));
    for (const h of step.held) {
      if (now.get(h.acceleratorId)?.attachHandles.some((x) => x.uuid === h.handleUuid)) await this.restore(host, agentId, h, out);
      else
        this.flag(
          host,
          h,
          `the card ${address} was laid out again after the host re-joined, but attach handle ${h.handleUuid} of instance ${h.instanceUuid} did not come back`,
          out,
        );
    }
  }

  private async restore(host: HostActor, agentId: string, held: HeldHandle, out: RejoinOutcome): Promise<void> {
    const actor = host.accelerators.get(held.acceleratorId);
    // Detached meanwhile: nothing to make again.
    if (!actor || !actor.context.allocations.some((x) => x.handleUuid === held.handleUuid)) return;
    try {
      // The session in the parameters makes the key new per agent start: an earlier session's
      // kept answer is never mistaken for this one, while a re-send in this one runs it once.
      await host.runOp({ op: 'restore', params: { handleUuid: held.handleUuid, session: agentId }, id: held.acceleratorId, host: host.name, seq: 0 });
    } catch (err) {
      this.flag(
        host,
        held,
        `attach handle ${held.handleUuid} of instance ${held.instanceUuid} lost its host side after the host re-joined and the driver could not make it again: ${(err as Error).message}`,
        out,
      );
      return;
    }
    out.restored.push(held.handleUuid);
    await this.audit({
      kind: 'accelerator',
      id: held.acceleratorId,
      host: host.name,
      event: 'RESTORE',
      from: actor.state,
      to: actor.state,
      at: new Date().toISOString(),
      reason: 'the host side of a held attach handle was lost (a reboot): made again',
      args: { handleUuid: held.handleUuid, instanceUuid: held.instanceUuid, ...(held.arqUuid ? { arqUuid: held.arqUuid } : {}) },
      ...ACTOR,
    });
  }

  /**
   * A handle a running guest holds and no record does: the accelerator is enabled if it waits
   * inactive (a guest uses it already), then bound to the guest's instance on that very handle.
   * The driver finds what the handle needs already made. A failure is said in the log and the
   * accelerator left as it is; the next agent session tries again.
   */
  private async adopt(host: HostActor, held: HeldHandle, out: RejoinOutcome): Promise<void> {
    const actor = host.accelerators.get(held.acceleratorId);
    if (!this.opts.adopt || !actor) return;
    const log = this.opts.log.child({ host: host.name, acceleratorId: held.acceleratorId, handleUuid: held.handleUuid, instanceUuid: held.instanceUuid });
    try {
      if (actor.state === AcceleratorStates.inactive) await actor.request({ type: 'ENABLE' }, ACTOR);
      await this.opts.adopt(held);
    } catch (err) {
      log.warn({ err }, "re-join reconciliation could not adopt a handle a running guest holds; tried again at the agent's next start");
      return;
    }
    out.adopted.push(held.handleUuid);
    log.info('adopted an attach handle a running guest holds: bound to its instance');
    await this.audit({
      kind: 'accelerator',
      id: held.acceleratorId,
      host: host.name,
      event: 'ADOPT',
      from: actor.state,
      to: actor.state,
      at: new Date().toISOString(),
      reason: 'a running guest on the host holds this attach handle and no record did: bound to its instance',
      args: { handleUuid: held.handleUuid, instanceUuid: held.instanceUuid },
      ...ACTOR,
    });
  }

  private flag(host: HostActor, held: HeldHandle, reason: string, out: RejoinOutcome): void {
    out.flagged.push({ acceleratorId: held.acceleratorId, handleUuid: held.handleUuid, reason });
    this.opts.log.warn(
      { host: host.name, acceleratorId: held.acceleratorId, handleUuid: held.handleUuid, instanceUuid: held.instanceUuid, reason },
      're-join reconciliation could not restore a held handle: flagged, the instance left attached',
    );
    // Fatal: it stays out of service (reserved in Placement) until an operator clears or resets it.
    host.accelerators.get(held.acceleratorId)?.healthCheck({ ok: false, severity: 'fatal', reason, at: Date.now() }, ACTOR);
  }

  /** The audit record of something done on the conductor's own initiative, shown once committed. */
  private async audit(record: TransitionRecord): Promise<void> {
    try {
      await this.opts.journal.commit([{ type: 'transition', record }]);
      this.opts.hub.publish(record);
    } catch (err) {
      this.opts.log.warn({ err, id: record.id, event: record.event }, 'could not record a re-join reconciliation step in the audit log');
    }
  }
}
