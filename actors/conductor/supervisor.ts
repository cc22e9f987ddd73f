import type { Logger } from 'pino';
import type { Bus } from '../../bus/index.js';
import { CyborgError, NotFoundError } from '../../errors/index.js';
import { acceleratorMachine, type ArqInput, ArqStates, type Binding, type BoundTo, type DriverOpInput } from '../../machines/index.js';
import type { ArqHold, EventHub } from '../../model/index.js';
import { Passivation, type AcceleratorRecord, type ArqRecord, type Change, type Journal, type Recovered } from '../runtime/index.js';
import type { HeldHandle } from '../services/index.js';
import { AcceleratorIndex } from './accelerator-index.js';
import type { AcceleratorActor } from './accelerator-actor.js';
import { ArqActor, type ArqLogic } from './arq-actor.js';
import { ArqBinder, type RemoteArqOps } from './arq-binder.js';
import { ArqInstanceIndex } from './arq-instance-index.js';
import { HostActor, type HostActorOptions } from './host-actor.js';
import { provideMachines, type TreeEffects } from './effects.js';
import type { Timing } from './timing.js';

export interface SupervisorOptions {
  bus: Bus;
  journal: Journal;
  hub: EventHub;
  log: Logger;
  timing: Timing;
  /** Overrides the accelerator machine of every host (tests inject faults with it). */
  acceleratorMachine?: typeof acceleratorMachine;
  /** How long an accelerator's machine stays live after its last event (see Passivation). */
  restAfterMs?: number;
  /** Binds to accelerators that other conductors hold (several conductors; see ArqHome). */
  remoteArqs?: RemoteArqOps;
  /**
   * Whether `host` is ours by its lease but not rebuilt here yet (a takeover under way, with
   * several conductors: the HostRouter knows). Its accelerators are not gone, only not here yet.
   */
  hostPending?: (host: string) => boolean;
  /** Something changed that unfinished releases may have waited for (a host back, hosts or ARQs adopted). */
  onChange: () => void;
}

/**
 * The actor tree: one HostActor per compute host (each supervising its accelerators) and one
 * ArqActor per accelerator request. It spawns, rebuilds from the journal, adopts and releases
 * them, and finds them by id or resource provider; it decides nothing about requests.
 */
export class Supervisor implements TreeEffects {
  readonly hosts = new Map<string, HostActor>();
  readonly arqs = new Map<string, ArqActor>();
  readonly passivation: Passivation;
  /** Attach/detach on behalf of ARQs, one at a time per accelerator. */
  readonly binder: ArqBinder;
  private readonly index = new AcceleratorIndex(this.hosts);
  private readonly byInstance = new ArqInstanceIndex();
  /** Provided machines, built once and shared by every actor (providing copies the definition). */
  private readonly logic: HostActorOptions['logic'];
  private readonly arqLogic: ArqLogic;
  private stopping = false;

  constructor(private readonly opts: SupervisorOptions) {
    this.passivation = new Passivation(opts.restAfterMs ?? 30_000);
    const machines = provideMachines(this, opts.timing, opts.acceleratorMachine);
    this.logic = { host: machines.host, accelerator: machines.accelerator };
    this.arqLogic = machines.arq;
    this.binder = new ArqBinder({
      byRp: (rp) => this.acceleratorByRp(rp),
      byId: (id) => this.acceleratorActor(id),
      has: (id) => this.findAccelerator(id) !== undefined,
      heldBy: (arq) => this.heldBy(arq),
      log: opts.log,
      ...(opts.remoteArqs ? { remote: opts.remoteArqs } : {}),
    });
  }

  // --- the machines' effects (effects.ts): each finds the actor it is for -------------------

  runDriverOp(input: DriverOpInput): Promise<Record<string, unknown>> {
    const host = this.hosts.get(input.host);
    return host ? host.runOp(input) : Promise.reject(new NotFoundError('host.not_found', input.host));
  }

  hostLost(host: string): void {
    this.hosts.get(host)?.broadcast({ type: 'HOST_LOST' });
  }

  hostReturned(host: string): void {
    this.hosts.get(host)?.broadcast({ type: 'HOST_BACK' });
    this.opts.onChange();
  }

  lastSignOf(host: string): number | undefined {
    return this.hosts.get(host)?.lastSignAt;
  }

  bindArq(uuid: string, binding: Binding): Promise<BoundTo> {
    return this.binder.bind(uuid, binding);
  }

  releaseArq(uuid: string, boundTo: BoundTo | null): Promise<void> {
    const host = this.arqs.get(uuid)?.view().binding?.hostname;
    if (host && this.opts.hostPending?.(host)) {
      return Promise.reject(new CyborgError('lease.not_owner', `host ${host} is being taken over; the release waits for it`, { host }));
    }
    return this.binder.unbind(uuid, boundTo);
  }

  /** Rebuilds every host, accelerator and ARQ from the journal's committed state. */
  recover(state: Recovered): void {
    const records = new Map<string, Map<string, AcceleratorRecord>>();
    for (const a of state.accelerators) {
      const m = records.get(a.host) ?? new Map<string, AcceleratorRecord>();
      m.set(a.id, a.record);
      records.set(a.host, m);
    }
    for (const h of state.hosts) this.build(h, records.get(h.host));
    this.adoptArqs(state.arqs);
  }

  /**
   * Builds a host from its recorded state, replacing any actor of that name: a conductor taking
   * over a host whose lease another conductor held (roles/conductor.ts, actors/cluster/host-router.ts).
   */
  adoptHost(h: Recovered['hosts'][number], acceleratorRecords?: Map<string, AcceleratorRecord>): HostActor {
    this.hosts.get(h.host)?.stop();
    const actor = this.build(h, acceleratorRecords);
    this.opts.onChange();
    return actor;
  }

  /** Stops a host's actors without writing anything: its lease moved to another conductor. */
  releaseHost(name: string): boolean {
    const h = this.hosts.get(name);
    if (!h) return false;
    h.stop();
    return this.hosts.delete(name);
  }

  /** The host actor of `name`, created empty on its agent's first word. */
  hostFor(name: string): HostActor {
    let h = this.hosts.get(name);
    if (!h) {
      h = new HostActor(this.hostOptions(name));
      this.hosts.set(name, h);
    }
    return h;
  }

  /** Records a host's accelerators after its inventory spawned new ones. */
  indexHost(host: HostActor): void {
    this.index.addHost(host);
  }

  spawnArq(input: ArqInput, record?: ArqRecord): ArqActor {
    let spawned = false;
    const arq: ArqActor = new ArqActor({
      input,
      record,
      logic: this.arqLogic,
      journal: this.opts.journal,
      hub: this.opts.hub,
      log: this.opts.log,
      onDeleted: () => this.forgetArq(arq),
      onDropped: () => this.forgetArq(arq),
      // A dropped actor's late commit must not move the entry of the one that replaced it.
      onView: (v) => {
        if (!spawned || this.arqs.get(v.uuid) === arq) this.byInstance.set(v.uuid, v.binding?.instanceUuid);
      },
    });
    this.arqs.set(input.uuid, arq);
    spawned = true;
    return arq;
  }

  /** Replaces the ARQ actors with these records (this conductor became the ARQ home). */
  adoptArqs(arqs: Recovered['arqs']): void {
    this.dropArqs();
    for (const a of arqs) {
      const ctx = a.record.context;
      this.spawnArq(
        { uuid: a.uuid, deviceProfileName: ctx.deviceProfileName, deviceProfileGroupId: ctx.deviceProfileGroupId, projectId: ctx.projectId },
        a.record,
      );
    }
    // Deletes the previous home acknowledged but did not finish are ours to finish now.
    this.opts.onChange();
  }

  /**
   * Changes answered 503 that had committed after all (the journal's `onLanded`): the ARQs and
   * accelerators they name take the records the database holds.
   */
  landed(changes: readonly Change[]): void {
    for (const c of changes) {
      if (c.type === 'accelerator') this.findAccelerator(c.id)?.landed(c.record);
      if (c.type !== 'arq') continue;
      const actor = this.arqs.get(c.uuid);
      if (actor) actor.landed(c.record, c.deleted);
      else if (!c.deleted) {
        const ctx = c.record.context;
        this.spawnArq(
          { uuid: c.uuid, deviceProfileName: ctx.deviceProfileName, deviceProfileGroupId: ctx.deviceProfileGroupId, projectId: ctx.projectId },
          c.record,
        );
      }
    }
  }

  /** Drops every ARQ actor (the ARQ home moved to another conductor). */
  dropArqs(): void {
    for (const a of this.arqs.values()) a.stop();
    this.arqs.clear();
    this.byInstance.clear();
  }

  forgetArq(arq: ArqActor): void {
    if (this.arqs.get(arq.uuid) !== arq) return;
    arq.stop();
    this.arqs.delete(arq.uuid);
    this.byInstance.delete(arq.uuid);
  }

  /** The ARQ actors whose committed view is bound to `instance`, by the index (no walk of every ARQ). */
  arqsOfInstance(instance: string): ArqActor[] {
    const out: ArqActor[] = [];
    for (const uuid of this.byInstance.arqsOf(instance)) {
      const a = this.arqs.get(uuid);
      if (a?.view().binding?.instanceUuid === instance) out.push(a);
    }
    return out;
  }

  arqActor(uuid: string): ArqActor {
    const a = this.arqs.get(uuid);
    if (!a || a.state === ArqStates.Deleted) throw new NotFoundError('arq.not_found', uuid);
    return a;
  }

  /** The accelerator's actor if one of this conductor's hosts has it. */
  findAccelerator(id: string): AcceleratorActor | undefined {
    return this.index.byId(id);
  }

  acceleratorActor(id: string): AcceleratorActor {
    const a = this.findAccelerator(id);
    if (!a) throw new NotFoundError('accelerator.not_found', id);
    return a;
  }

  /** The host holding accelerator `id` (the inventory check: a device is one host's only). */
  holderOf(id: string): string | undefined {
    return this.index.indexedHostOf(id);
  }

  /** The accelerator whose Placement resource provider is `rpUuid` (how Nova names a deployable). */
  acceleratorByRp(rpUuid: string): AcceleratorActor | undefined {
    return this.index.byRp(rpUuid);
  }

  /** Every attach handle this conductor's accelerators hold for an ARQ (the orphan sweep's input). */
  heldHandles(): HeldHandle[] {
    const out: HeldHandle[] = [];
    for (const a of this.accelerators()) {
      for (const x of a.context.allocations) if (x.arqUuid) out.push({ acceleratorId: a.id, handleUuid: x.handleUuid, arqUuid: x.arqUuid });
    }
    return out;
  }

  /** The handle an ARQ holds, found in the accelerators' allocations (a walk: rare, see ArqBinder.unbind). */
  heldBy(arqUuid: string): BoundTo | undefined {
    for (const a of this.accelerators()) {
      const alloc = a.context.allocations.find((x) => x.arqUuid === arqUuid);
      if (alloc) return { acceleratorId: a.id, handleUuid: alloc.handleUuid };
    }
    return undefined;
  }

  /** Each ARQ's state and held handle, null for one that does not exist (served by the ARQ home). */
  arqHolds(uuids: readonly string[]): Record<string, ArqHold | null> {
    const out: Record<string, ArqHold | null> = {};
    for (const u of uuids) {
      const a = this.arqs.get(u);
      out[u] = a ? { state: a.state, boundTo: a.view().boundTo } : null;
    }
    return out;
  }

  *accelerators(): Iterable<AcceleratorActor> {
    for (const h of this.hosts.values()) yield* h.accelerators.values();
  }

  /** Refuses new writes from now on: the conductor is shutting down (`assertRunning`). */
  refuseWrites(): void {
    this.stopping = true;
  }

  /** Throws while the conductor stops: every desk asks before it starts a write. */
  assertRunning(): void {
    if (this.stopping) throw new CyborgError('service.shutting_down', 'the conductor is shutting down');
  }

  /**
   * Lets the operations under way end — a bind waiting for its agent's attach, a detach, an
   * install — for at most `withinMs`: a graceful stop (a restart, a rolling upgrade) must not
   * leave them to be recovered as "interrupted" (a failed bind, an accelerator in `error`) by the
   * conductor that takes its hosts over. New writes are refused meanwhile (`refuseWrites`).
   */
  async drain(withinMs: number): Promise<void> {
    const busy: Promise<void>[] = [];
    for (const a of this.accelerators()) if (a.busy) busy.push(a.idle(withinMs));
    for (const a of this.arqs.values()) busy.push(a.idle(withinMs));
    await Promise.all(busy);
  }

  /** Waits for every actor's commits, then stops them all. */
  async stop(): Promise<void> {
    await Promise.all([...this.accelerators()].map((a) => a.flushed().catch(() => undefined)));
    await Promise.all([...this.arqs.values()].map((a) => a.flushed().catch(() => undefined)));
    for (const h of this.hosts.values()) h.stop();
    for (const a of this.arqs.values()) a.stop();
    this.passivation.stop();
  }

  private build(h: Recovered['hosts'][number], acceleratorRecords?: Map<string, AcceleratorRecord>): HostActor {
    const actor = new HostActor({ ...this.hostOptions(h.host), record: h.record, drivers: h.drivers, devices: h.devices, acceleratorRecords });
    this.hosts.set(h.host, actor);
    this.index.addHost(actor);
    return actor;
  }

  private hostOptions(name: string): HostActorOptions {
    const { bus, journal, hub, log, timing } = this.opts;
    return { name, bus, journal, hub, log, timing, passivation: this.passivation, logic: this.logic };
  }
}
