import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Bus, Unsubscribe } from '../../bus/bus.js';
import { HealthMessage, HeartbeatMessage, InventoryMessage, InventoryReply, ProgressMessage, RegisterMessage, RegisterReply, TelemetryMessage, type InventoryMsg, type TelemetryMsg } from '../../bus/schemas.js';
import { Subjects } from '../../bus/subjects.js';
import { CyborgError, NotFoundError } from '../../errors/index.js';
import { acceleratorMachine, isDeleting, type AcceleratorEvent, type ArqInput, type Binding, type BoundTo } from '../../machines/index.js';
import { acceleratorLogic, type AcceleratorActor } from './accelerator-actor.js';
import { assertNotAllocated, type ProviderAllocations } from './allocation-guard.js';
import { ArqActor, arqLogic } from './arq-actor.js';
import { ArqBinder, type RemoteArqOps } from './arq-binder.js';
import { OrphanSweep, type HeldHandle } from './orphan-sweep.js';
import { Rejoin, type RejoinOutcome } from './rejoin.js';
import { pciAddressOf } from './rejoin-plan.js';
import { UsageWindows } from './usage-window.js';
import { DocumentStore } from './documents.js';
import { DriverAdmin } from './driver-admin.js';
import { Passivation } from '../runtime/index.js';
import { inventoryRefusal, reportFromItsHost, type ReportStats } from './report-host.js';
import { healthPolicyOf, HostActor, hostLogic, opDeadlineMs, type HostActorOptions, type Timing } from './host-actor.js';
import type { Journal, MachineRecord, Recovered } from '../runtime/index.js';
import { EventHub, type AcceleratorFilter, type AcceleratorUsage, type AcceleratorView, type ArqHold, type AuditPage, type HostUsage, type RelayoutRequest, type AuditQuery, type ArqFilter, type ArqView, type AttachHandleT, type ControlPlane, type DeviceT, type HostView, type PlacementStatusView, type RequestMeta, type TransitionRecord } from '../../model/index.js';

export interface ConductorOptions {
  bus: Bus;
  journal: Journal;
  log: Logger;
  timing: Timing & { heartbeatIntervalMs: number };
  /** Overrides the accelerator machine of every host (tests inject faults with it). */
  acceleratorMachine?: typeof acceleratorMachine;
  /** How long an accelerator's machine stays live after its last event (see Passivation). */
  restAfterMs?: number;
  /** Binds to accelerators that other conductors hold (several conductors; see ArqHome). */
  remoteArqs?: RemoteArqOps;
  /**
   * How long an unbind or delete waits for its release before answering with the committed intent
   * (`Unbinding`, `Deleting`) while reconciliation finishes it; below the api → conductor timeout.
   */
  releaseWaitMs?: number;
  /** How often acknowledged deletes and unbinds whose release could not finish are retried. */
  reconcileEveryMs?: number;
  /** How long an attach handle stays orphaned (its ARQ gone) before the sweep releases it (OrphanSweep). */
  orphanGraceMs?: number;
  /** Usage samples kept per accelerator (in memory only; 0 keeps none). */
  usageWindow?: number;
}

const RELEASE_WAIT_MS = 2_000;
const RECONCILE_EVERY_MS = 5_000;
const ORPHAN_GRACE_MS = 10_000;
/** Five minutes of samples at the agents' default 5 s telemetry interval. */
const USAGE_WINDOW = 60;

/**
 * The supervisor of the actor tree: one HostActor per compute host (each hosting its
 * accelerators) and one ArqActor per accelerator request. Every write goes through it; it
 * rebuilds the tree from the journal on start.
 */
export class Conductor implements ControlPlane {
  readonly hub = new EventHub();
  /** Each accelerator's Placement sync state, set by the role that starts a PlacementSync. */
  placementLookup: ((id: string) => PlacementStatusView | undefined) | null = null;
  /** Whether `host` is ours by its lease but not rebuilt here yet (set by the HostRouter, with several conductors). */
  hostPending: ((host: string) => boolean) | null = null;
  /** Each provider's allocations in Placement, set with the Placement sync: operator actions never go below one. */
  providerAllocations: ProviderAllocations | null = null;
  readonly hosts = new Map<string, HostActor>();
  readonly arqs = new Map<string, ArqActor>();
  private readonly hostOf = new Map<string, HostActor>();
  readonly documents: DocumentStore;
  /** Drivers per host (install / uninstall / update), backend services, instance attach (generic-driver spec). */
  readonly driverAdmin: DriverAdmin;
  /** Attach/detach on behalf of ARQs, one at a time per accelerator. */
  private readonly binder: ArqBinder;
  private subs: Unsubscribe[] = [];
  private stopping = false;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private reconcileQueued = false;
  private readonly orphans: OrphanSweep;
  private readonly respecifiedListeners = new Set<(ids: string[]) => void>();
  /**
   * Accelerators an inventory reported with other traits, resource class or size, with no
   * transition to say so: the Placement sync hears of them at once, not at its next full pass.
   */
  readonly respecified = {
    subscribe: (listener: (ids: string[]) => void): (() => void) => {
      this.respecifiedListeners.add(listener);
      return () => this.respecifiedListeners.delete(listener);
    },
  };
  /** Re-applies what a reboot lost for held handles when an agent re-joins (rejoin.ts). */
  private readonly rejoin: Rejoin;
  /** The last re-join comparison of each host, while it runs or once done (operators' checks, tests). */
  readonly rejoins = new Map<string, Promise<RejoinOutcome>>();
  /** Agent reports refused at the door (exposed as metrics by the role). */
  readonly reportStats: ReportStats = { misaddressedReports: 0, refusedReports: 0 };
  /** Recent usage of the accelerators held here (telemetry; never in the database). */
  readonly usage: UsageWindows;

  /** Provided machines, built once and shared by every actor (providing copies the definition). */
  private readonly logic: HostActorOptions['logic'];
  private readonly arqLogic: ReturnType<typeof arqLogic>;
  readonly passivation: Passivation;

  constructor(private readonly opts: ConductorOptions) {
    this.passivation = new Passivation(opts.restAfterMs ?? 30_000);
    this.logic = {
      host: hostLogic(opts.timing, (h) => this.hosts.get(h)?.broadcast({ type: 'HOST_LOST' }), (h) => {
        this.hosts.get(h)?.broadcast({ type: 'HOST_BACK' });
        this.reconcileSoon();
      },
        (h) => this.hosts.get(h)?.lastSignAt),
      accelerator: acceleratorLogic((input) => {
        const host = this.hosts.get(input.host);
        return host ? host.runOp(input) : Promise.reject(new NotFoundError('host.not_found', input.host));
      }, (op) => opDeadlineMs(opts.timing, op), opts.acceleratorMachine ?? acceleratorMachine, healthPolicyOf(opts.timing)),
    };
    this.binder = new ArqBinder({
      byRp: (rp) => this.acceleratorByRp(rp), byId: (id) => this.acceleratorActor(id), has: (id) => this.findAccelerator(id) !== undefined, heldBy: (arq) => this.heldBy(arq), log: opts.log,
      ...(opts.remoteArqs ? { remote: opts.remoteArqs } : {}),
    });
    this.arqLogic = arqLogic((u, b) => this.binder.bind(u, b), (u, boundTo) => {
      // A host whose lease is ours but whose actors are not rebuilt yet (a takeover under way):
      // its accelerators are not "gone", they are not here yet. Released once it is adopted.
      const host = this.arqs.get(u)?.view().binding?.hostname;
      if (host && this.hostPending?.(host)) {
        return Promise.reject(new CyborgError('lease.not_owner', `host ${host} is being taken over; the release waits for it`, { host }));
      }
      return this.binder.unbind(u, boundTo);
    });
    this.usage = new UsageWindows(opts.usageWindow ?? USAGE_WINDOW);
    this.orphans = new OrphanSweep({
      held: () => this.heldHandles(),
      // With several conductors only the ARQ home knows the ARQs: it is asked, even by itself.
      holds: (uuids) => (opts.remoteArqs ? opts.remoteArqs.holds(uuids) : Promise.resolve(this.arqHolds(uuids))),
      release: (h) => this.binder.unbind(h.arqUuid, { acceleratorId: h.acceleratorId, handleUuid: h.handleUuid }, true, { actor: 'conductor' }),
      graceMs: opts.orphanGraceMs ?? ORPHAN_GRACE_MS, pageSize: 500, log: opts.log,
    });
    this.rejoin = new Rejoin({
      log: opts.log.child({ component: 'rejoin' }), journal: opts.journal, hub: this.hub,
      holds: (uuids) => (opts.remoteArqs ? opts.remoteArqs.holds(uuids) : Promise.resolve(this.arqHolds(uuids))),
    });
    this.documents = new DocumentStore(opts.journal, opts.log.child({ component: 'documents' }));
    this.driverAdmin = new DriverAdmin({ bus: opts.bus, journal: opts.journal, log: opts.log.child({ component: 'drivers' }), control: this, timeoutMs: opts.timing.driverOpTimeoutMs,
      settle: (id) => this.acceleratorActor(id).flushed(),
    });
  }

  async start(): Promise<void> {
    await this.recover();
    const { bus } = this.opts;
    const queue = { queue: 'cyborg-conductors' };
    this.subs.push(
      bus.respond(Subjects.register, RegisterMessage, RegisterReply, async (msg, subject) => {
        this.fromItsHost(subject, msg);
        // The recorded driver states (install-driver & co.) win over what a restarted agent ships.
        const { drivers, persisted } = this.driverAdmin.onRegister(msg.host, msg.drivers);
        const registered = this.hostFor(msg.host).register(msg.agentId, msg.epoch ?? 0, drivers.map((d) => ({ name: d.name, version: d.version })));
        await Promise.all([persisted, registered]);
        this.opts.log.info({ host: msg.host, agentId: msg.agentId, drivers: msg.drivers }, 'agent registered');
        // An agent back: releases that waited for it can go on.
        this.reconcileSoon();
        return { ok: true, heartbeatIntervalMs: this.opts.timing.heartbeatIntervalMs, drivers };
      }, queue),
      bus.respond(Subjects.inventory, InventoryMessage, InventoryReply, async (msg, subject) => {
        this.fromItsHost(subject, msg);
        this.believable(msg);
        const host = this.hostFor(msg.host);
        const recorded = host.inventory();
        const respecified = await host.applyInventory(msg.devices, { actor: `agent:${msg.agentId}` });
        if (respecified.length > 0) for (const l of this.respecifiedListeners) l(respecified);
        if (this.holders) for (const id of host.accelerators.keys()) this.holders.set(id, host.name);
        // After the answer: the agent's commands for it are run while its report is acknowledged.
        if (msg.observed && !this.stopping) this.compareRejoin(host, msg.agentId, recorded, msg.observed);
        return { ok: true, accelerators: host.accelerators.size };
      }, queue),
      bus.subscribe(Subjects.heartbeat, HeartbeatMessage, (msg, subject) => {
        if (!reportFromItsHost(subject, msg, this.reportStats, this.opts.log)) return;
        const host = this.hosts.get(msg.host);
        if (host) host.heartbeat(msg.agentId, msg.epoch, msg.seq);
        else this.opts.log.debug({ host: msg.host }, 'heartbeat from a host that has not registered');
      }, queue),
      bus.subscribe(Subjects.health, HealthMessage, (msg, subject) => {
        if (!reportFromItsHost(subject, msg, this.reportStats, this.opts.log)) return;
        const host = this.hosts.get(msg.host);
        if (host) host.applyHealth(msg);
        else this.opts.log.warn({ host: msg.host, agentId: msg.agentId, checks: msg.checks.length }, 'health checks from a host that has not registered: dropped');
      }, queue),
      // Every conductor hears every host's telemetry (no queue group) and keeps its own hosts'.
      ...(this.opts.usageWindow === 0 ? [] : [bus.subscribe(Subjects.telemetryAll, TelemetryMessage, (msg, subject) => {
        // Only the host's own subject may carry its samples (its NATS credentials allow no other).
        if (subject === Subjects.telemetry(msg.host)) this.recordUsage(msg);
        else this.reportStats.misaddressedReports++;
      })]),
      // Steps of a programming under way, logged by the conductor holding the host against the
      // accelerator (a bind waiting on it shows why it takes minutes); said, never stored.
      bus.subscribe(Subjects.progressAll, ProgressMessage, (msg, subject) => {
        if (subject !== Subjects.progress(msg.host)) {
          this.reportStats.misaddressedReports++;
          return;
        }
        if (!this.hosts.has(msg.host)) return;
        this.opts.log.info({ host: msg.host, acceleratorId: msg.deployableUuid, op: msg.op, key: msg.key, phase: msg.phase, progress: msg.message }, 'programming progress');
      }),
      // A removed accelerator's window goes at once (the reconcile round's prune catches the rest).
      this.hub.subscribe((ev) => {
        if (ev.kind === 'accelerator' && ev.to === 'removed') this.usage.forget(ev.id);
      }),
    );
    this.reconcileTimer = setInterval(() => {
      this.reconcile(false);
      this.usage.prune((id) => this.keepsUsageOf(this.findAccelerator(id)));
      if (!this.stopping) void this.orphans.run().catch((err: unknown) => this.opts.log.warn({ err }, 'the sweep of orphaned attach handles could not ask the ARQ home; next round'));
    }, this.opts.reconcileEveryMs ?? RECONCILE_EVERY_MS);
    this.reconcileTimer.unref();
    this.opts.log.info({ hosts: this.hosts.size, arqs: this.arqs.size }, 'conductor started');
    // Deletes and unbinds a crash or an earlier failure left unfinished.
    this.reconcileSoon();
  }

  /**
   * Finishes acknowledged deletes and unbinds whose release could not be done when asked (agent
   * away, the accelerator's conductor failing over, a crash in between): each is retried; one
   * that fails again waits for the next round (the timer, an agent registering, a host back,
   * hosts or ARQs adopted; the timer's rounds back off per ARQ). Returns how many were retried.
   */
  reconcile(force = true): number {
    if (force) this.reconcileQueued = false;
    if (this.stopping) return 0;
    let n = 0;
    for (const a of this.arqs.values()) if (a.retry(force)) n++;
    if (n > 0) this.opts.log.info({ arqs: n }, 'reconciling unfinished ARQ deletes and unbinds');
    return n;
  }

  /** A reconciliation round at the next turn (several triggers at once make one round). */
  private reconcileSoon(): void {
    if (this.reconcileQueued) return;
    this.reconcileQueued = true;
    setImmediate(() => this.reconcile());
  }

  /** The first report of an agent session is compared with what instances hold (once per session). */
  private compareRejoin(host: HostActor, agentId: string, recorded: DeviceT[], observed: NonNullable<InventoryMsg['observed']>): void {
    const run = this.rejoin.compare(host, agentId, recorded, observed);
    if (!run) return;
    run.catch((err: unknown) => this.opts.log.error({ err, host: host.name }, 're-join reconciliation failed; the next agent session compares again'));
    this.rejoins.set(host.name, run);
  }

  /** Refuses (logged, counted, answered with the reason) an inventory that claims what it may not. */
  private believable(msg: InventoryMsg): void {
    const why = inventoryRefusal(msg.host, msg.devices, (h) => this.hosts.has(h), (id) => this.holderOf(id));
    if (why === undefined) return;
    this.reportStats.refusedReports++;
    this.opts.log.warn({ host: msg.host, agentId: msg.agentId, reason: why }, 'refused an inventory');
    throw new CyborgError('request.invalid', `inventory refused: ${why}`, { host: msg.host });
  }

  /** A request naming another host than its subject's is refused: the agent hears why. */
  private fromItsHost(subject: string, msg: { host: string }): void {
    if (!reportFromItsHost(subject, msg, this.reportStats, this.opts.log)) {
      throw new CyborgError('request.forbidden', `a report for host ${msg.host} must come on that host's subject, not ${subject}`, { host: msg.host, subject });
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.reconcileTimer);
    for (const u of this.subs) u();
    await Promise.all([...this.hosts.values()].flatMap((h) => [...h.accelerators.values()].map((a) => a.flushed().catch(() => undefined))));
    await Promise.all([...this.arqs.values()].map((a) => a.flushed().catch(() => undefined)));
    for (const h of this.hosts.values()) h.stop();
    for (const a of this.arqs.values()) a.stop();
    this.passivation.stop();
  }

  // --- reads (last committed view) ----------------------------------------------------------

  listHosts(): HostView[] {
    return [...this.hosts.values()].map((h) => h.view());
  }

  getHost(name: string): HostView {
    const h = this.hosts.get(name);
    if (!h) throw new NotFoundError('host.not_found', name);
    return h.view();
  }

  hostInventory(name: string): DeviceT[] {
    const h = this.hosts.get(name);
    if (!h) throw new NotFoundError('host.not_found', name);
    return h.inventory();
  }

  listAccelerators(filter: AcceleratorFilter = {}): AcceleratorView[] {
    const out: AcceleratorView[] = [];
    for (const h of this.hosts.values()) {
      if (filter.host && h.name !== filter.host) continue;
      for (const a of h.accelerators.values()) {
        const v = a.view();
        if (filter.state && v.state !== filter.state) continue;
        if (filter.type && v.deviceType !== filter.type) continue;
        out.push(v);
      }
    }
    return out;
  }

  placementStatus(id: string): PlacementStatusView | undefined {
    return this.placementLookup?.(id);
  }

  getAccelerator(id: string): AcceleratorView {
    return this.acceleratorActor(id).view();
  }

  history(id: string, limit = 200): Promise<TransitionRecord[]> {
    return this.opts.journal.history(id, limit);
  }

  /** The fleet's audit log, filtered and paged, from the journal's database. */
  audit(q: AuditQuery): Promise<AuditPage> {
    if (!this.opts.journal.audit) throw new CyborgError('persistence.unavailable', 'this conductor keeps no audit log');
    return this.opts.journal.audit(q);
  }

  acceleratorActor(id: string): AcceleratorActor {
    const a = this.findAccelerator(id);
    if (!a) throw new NotFoundError('accelerator.not_found', id);
    return a;
  }

  /**
   * Which host holds each accelerator, for the inventory check: most deployables an inventory
   * names are new, and a scan of every host for each of them makes a fleet's registration
   * quadratic. Built from every host when first needed (and again after hosts are rebuilt or
   * adopted), then kept by each applied inventory; an entry whose host no longer has the
   * accelerator counts as none.
   */
  private holders: Map<string, string> | undefined;

  private holderOf(id: string): string | undefined {
    if (!this.holders) {
      this.holders = new Map();
      for (const h of this.hosts.values()) for (const a of h.accelerators.keys()) this.holders.set(a, h.name);
    }
    const name = this.holders.get(id);
    return name !== undefined && this.hosts.get(name)?.accelerators.has(id) ? name : undefined;
  }

  /** The accelerator's actor if one of this conductor's hosts has it. */
  findAccelerator(id: string): AcceleratorActor | undefined {
    // Which host holds an accelerator, remembered: a scan of every host per request is 10,000
    // map lookups in a large fleet. A stale hint (host released, actor restarted) falls back to the scan.
    const hint = this.hostOf.get(id);
    const hinted = hint && this.hosts.get(hint.name) === hint ? hint.accelerators.get(id) : undefined;
    if (hinted) return hinted;
    for (const h of this.hosts.values()) {
      const a = h.accelerators.get(id);
      if (a) {
        this.hostOf.set(id, h);
        return a;
      }
    }
    return undefined;
  }

  async relayout(hostName: string, req: RelayoutRequest, meta: RequestMeta = {}): Promise<AcceleratorView[]> {
    this.assertRunning();
    const host = this.hosts.get(hostName);
    if (!host) throw new NotFoundError('host.not_found', hostName);
    const card = host.inventory().find((d) => pciAddressOf(d.controlPath.info) === req.address.toLowerCase());
    if (!card) throw new NotFoundError('accelerator.not_found', `${hostName} has no card at ${req.address}`);
    const accelerators = card.deployables.map((d) => host.accelerators.get(d.uuid)).filter((a) => a !== undefined);
    const action = req.kind === 'mig' ? 'APPLY_MIG_LAYOUT' : 'SET_VF_COUNT';
    // Never below an allocation: Cyborg's own, then Placement's (Nova may hold one not bound yet).
    for (const a of accelerators) {
      const consumers = a.context.allocations.map((x) => x.instanceUuid);
      if (consumers.length > 0) {
        throw new CyborgError('accelerator.allocated', `accelerator ${a.id} is attached to instance ${consumers.join(', ')}: the re-layout of ${req.address} is refused until it is detached`, { acceleratorId: a.id, action, consumers });
      }
      await assertNotAllocated(this.providerAllocations, a, action);
    }
    const target = accelerators[0];
    if (!target) throw new NotFoundError('accelerator.not_found', `no accelerator of ${hostName} is on the card at ${req.address}`);
    const params = req.kind === 'mig' ? { address: req.address, profiles: req.profiles } : { address: req.address, count: req.count };
    await host.runOp({ op: req.kind === 'mig' ? 'mig_layout' : 'vf_count', params, id: target.id, host: hostName, seq: Date.now() });
    const args: Record<string, string | number> = req.kind === 'mig' ? { address: req.address, profiles: req.profiles.join(',') } : { address: req.address, count: req.count };
    await this.opts.journal.commit([{ type: 'transition', record: {
      kind: 'host', id: hostName, host: hostName, event: action, from: host.state, to: host.state, at: new Date().toISOString(), args,
      ...(meta.actor ? { actor: meta.actor } : {}), ...(meta.requestId ? { requestId: meta.requestId } : {}), ...(meta.projectId ? { projectId: meta.projectId } : {}),
    } }]);
    return [...host.accelerators.values()].map((a) => a.view());
  }

  /** Keeps a host's usage samples of the accelerators held here; others are counted and dropped (never thrown). */
  private recordUsage(msg: TelemetryMsg): void {
    const host = this.hosts.get(msg.host);
    if (!host) return;
    const now = Date.now();
    for (const u of msg.usage) {
      if (this.keepsUsageOf(host.accelerators.get(u.deployableUuid))) this.usage.record(u.deployableUuid, msg.at, u, now);
      else this.usage.unknown();
    }
  }

  /** A removed accelerator's window goes with it (its series too: metrics/index.ts). */
  private keepsUsageOf(a: AcceleratorActor | undefined): a is AcceleratorActor {
    return a !== undefined && a.state !== 'removed';
  }

  acceleratorUsage(id: string): AcceleratorUsage {
    const a = this.findAccelerator(id);
    if (!a) throw new NotFoundError('accelerator.not_found', id);
    return { accelerator: id, host: a.host, samples: this.usage.samples(id) };
  }

  hostUsage(name: string): HostUsage {
    const h = this.hosts.get(name);
    if (!h) throw new NotFoundError('host.not_found', name);
    return { host: name, devices: [...h.accelerators.keys()].map((id) => ({ accelerator: id, samples: this.usage.samples(id) })).filter((d) => d.samples.length > 0) };
  }

  /** Every attach handle this conductor's accelerators hold for an ARQ (the orphan sweep's input). */
  private heldHandles(): HeldHandle[] {
    const out: HeldHandle[] = [];
    for (const h of this.hosts.values()) {
      for (const a of h.accelerators.values()) {
        for (const x of a.context.allocations) if (x.arqUuid) out.push({ acceleratorId: a.id, handleUuid: x.handleUuid, arqUuid: x.arqUuid });
      }
    }
    return out;
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

  /** The handle an ARQ holds, found in the accelerators' allocations (a scan: rare, see ArqBinder.unbind). */
  private heldBy(arqUuid: string): BoundTo | undefined {
    for (const h of this.hosts.values()) {
      for (const a of h.accelerators.values()) {
        const alloc = a.context.allocations.find((x) => x.arqUuid === arqUuid);
        if (alloc) return { acceleratorId: a.id, handleUuid: alloc.handleUuid };
      }
    }
    return undefined;
  }

  /** The accelerator whose Placement resource provider is `rpUuid` (how Nova names a deployable). */
  acceleratorByRp(rpUuid: string): AcceleratorActor | undefined {
    for (const h of this.hosts.values()) {
      for (const a of h.accelerators.values()) if (a.rpUuid === rpUuid) return a;
    }
    return undefined;
  }

  // --- writes -------------------------------------------------------------------------------

  async act(id: string, event: AcceleratorEvent, meta: RequestMeta = {}): Promise<AcceleratorView> {
    this.assertRunning();
    const actor = this.acceleratorActor(id);
    await assertNotAllocated(this.providerAllocations, { id, rpUuid: actor.rpUuid }, event.type);
    return actor.request(event, meta);
  }

  /** Attaches an instance to the first free attach handle (the operator's attach, without an ARQ). */
  attach(id: string, req: { instanceUuid: string; projectId?: string }, meta: RequestMeta = {}): Promise<AcceleratorView> {
    this.assertRunning();
    const actor = this.acceleratorActor(id);
    const handleUuid = actor.freeHandle() ?? '';
    return actor.request({ type: 'ATTACH', handleUuid, instanceUuid: req.instanceUuid, ...(req.projectId ? { projectId: req.projectId } : {}) }, meta);
  }

  detach(id: string, req: { handleUuid?: string; instanceUuid?: string }, meta: RequestMeta = {}): Promise<AcceleratorView> {
    this.assertRunning();
    const actor = this.acceleratorActor(id);
    const allocs = actor.context.allocations;
    const alloc = req.handleUuid
      ? allocs.find((a) => a.handleUuid === req.handleUuid)
      : req.instanceUuid ? allocs.find((a) => a.instanceUuid === req.instanceUuid) : allocs[0];
    return actor.request({ type: 'DETACH', handleUuid: alloc?.handleUuid ?? req.handleUuid ?? '' }, meta);
  }

  async createArq(req: { deviceProfileName: string; deviceProfileGroupId: number; projectId: string | null }, meta: RequestMeta = {}): Promise<ArqView> {
    this.assertRunning();
    const arq = this.spawnArq({ uuid: randomUUID(), ...req });
    await arq.announceCreated(meta);
    return arq.view();
  }

  listArqs(filter: ArqFilter = {}): ArqView[] {
    const out: ArqView[] = [];
    for (const a of this.arqs.values()) {
      const v = a.view();
      if (v.state === 'Deleted') continue;
      // An instance whose ARQs' delete was acknowledged has none left (Nova may bind anew).
      if (filter.instanceUuid !== undefined && (v.binding?.instanceUuid !== filter.instanceUuid || isDeleting(v.state))) continue;
      if (filter.projectId !== undefined && v.projectId !== filter.projectId) continue;
      out.push(v);
    }
    return out;
  }

  getAcceleratorByRp(rpUuid: string): AcceleratorView | undefined {
    return this.acceleratorByRp(rpUuid)?.view();
  }

  attachHandle(acceleratorId: string, handleUuid: string): AttachHandleT | undefined {
    for (const h of this.hosts.values()) {
      const a = h.accelerators.get(acceleratorId);
      if (a) return a.deployable.attachHandles.find((x) => x.uuid === handleUuid);
    }
    return undefined;
  }

  getArq(uuid: string): ArqView {
    return this.arqActor(uuid).view();
  }

  bindArq(uuid: string, binding: Binding, meta: RequestMeta = {}): Promise<ArqView> {
    this.assertRunning();
    const arq = this.arqActor(uuid);
    const { program: _ignored, ...asked } = binding;
    const program = this.programOf(arq.view());
    return arq.request({ type: 'BIND', ...asked, ...(program ? { program } : {}) }, meta);
  }

  /** What the ARQ's device profile group asks to program before binding (Cyborg's `accel:` keys). */
  private programOf(arq: ArqView): { bitstreamId?: string; functionId?: string } | undefined {
    const group = this.documents.profileByName(arq.deviceProfileName)?.groups[arq.deviceProfileGroupId];
    const bitstreamId = group?.['accel:bitstream_id'];
    const functionId = group?.['accel:function_id'];
    if (!bitstreamId && !functionId) return undefined;
    return { ...(bitstreamId ? { bitstreamId } : {}), ...(functionId ? { functionId } : {}) };
  }

  /** Durable intent: answered once `Unbinding` is committed, if the release takes longer (see `reconcile`). */
  unbindArq(uuid: string, meta: RequestMeta = {}): Promise<ArqView> {
    this.assertRunning();
    return this.arqActor(uuid).request({ type: 'UNBIND' }, meta, { settleWithinMs: this.releaseWaitMs });
  }

  /**
   * Durable intent: answered once `Deleting` is committed — `Deleted` if the release finished
   * meanwhile, else `Deleting` (or `DeletePending`), which reconciliation takes to `Deleted`.
   * Deleting an ARQ already on its way out tries its release again.
   */
  async deleteArq(uuid: string, meta: RequestMeta = {}): Promise<ArqView> {
    this.assertRunning();
    const arq = this.arqActor(uuid);
    if (arq.state === 'Deleting') return arq.view();
    const view = await arq.request({ type: 'DELETE' }, meta, { settleWithinMs: this.releaseWaitMs });
    if (view.state === 'Deleted') this.forgetArq(arq);
    return view;
  }

  private get releaseWaitMs(): number {
    return this.opts.releaseWaitMs ?? RELEASE_WAIT_MS;
  }

  private forgetArq(arq: ArqActor): void {
    if (this.arqs.get(arq.uuid) !== arq) return;
    arq.stop();
    this.arqs.delete(arq.uuid);
  }

  /**
   * Builds a host from its recorded state, replacing any actor of that name: a conductor taking
   * over a host whose lease another conductor held (roles/conductor.ts, actors/host-router.ts).
   */
  adoptHost(h: Recovered['hosts'][number], acceleratorRecords?: Map<string, MachineRecord>): HostActor {
    this.hosts.get(h.host)?.stop();
    this.rejoin.forget(h.host);
    const actor = new HostActor({
      name: h.host, bus: this.opts.bus, journal: this.opts.journal, hub: this.hub, log: this.opts.log, timing: this.opts.timing, passivation: this.passivation,
      record: h.record, drivers: h.drivers, devices: h.devices, acceleratorRecords, logic: this.logic,
    });
    this.hosts.set(h.host, actor);
    this.holders = undefined;
    this.reconcileSoon();
    return actor;
  }

  /** Stops a host's actors without writing anything: its lease moved to another conductor. */
  releaseHost(name: string): boolean {
    const h = this.hosts.get(name);
    if (!h) return false;
    h.stop();
    this.rejoin.forget(name);
    return this.hosts.delete(name);
  }

  /**
   * The ARQ home's bind, run here because this conductor holds the accelerator: resolves once
   * the attach is committed (the home's ARQ commit goes through another journal).
   */
  async attachForArq(arqUuid: string, binding: Binding): Promise<BoundTo> {
    this.assertRunning();
    const bound = await this.binder.bind(arqUuid, binding, true);
    await this.acceleratorActor(bound.acceleratorId).flushed();
    return bound;
  }

  /**
   * The ARQ home's unbind, run here: true once one of our accelerators has released the handle
   * and that is committed; false if none of ours holds it — unless we were asked as the holder of
   * the device's host (`asOwner`): then an accelerator that is gone has nothing left to release.
   */
  async releaseForArq(arqUuid: string, boundTo: BoundTo | null, asOwner = false): Promise<boolean> {
    this.assertRunning();
    const held = boundTo ?? this.heldBy(arqUuid);
    const actor = held ? this.findAccelerator(held.acceleratorId) : undefined;
    if (!held || !actor) return asOwner;
    await this.binder.unbind(arqUuid, held, true);
    await actor.flushed();
    return true;
  }

  /** Replaces the ARQ actors with these records (this conductor became the ARQ home). */
  adoptArqs(arqs: Recovered['arqs']): void {
    this.dropArqs();
    for (const a of arqs) {
      const ctx = a.record.context as unknown as ArqInput;
      this.spawnArq({ uuid: a.uuid, deviceProfileName: ctx.deviceProfileName, deviceProfileGroupId: ctx.deviceProfileGroupId, projectId: ctx.projectId }, a.record);
    }
    // Deletes the previous home acknowledged but did not finish are ours to finish now.
    this.reconcileSoon();
  }

  /** Drops every ARQ actor (the ARQ home moved to another conductor). */
  dropArqs(): void {
    for (const a of this.arqs.values()) a.stop();
    this.arqs.clear();
  }

  // --- internals ----------------------------------------------------------------------------

  private arqActor(uuid: string): ArqActor {
    const a = this.arqs.get(uuid);
    if (!a || a.state === 'Deleted') throw new NotFoundError('arq.not_found', uuid);
    return a;
  }

  private assertRunning(): void {
    if (this.stopping) throw new CyborgError('service.shutting_down', 'the conductor is shutting down');
  }

  private hostFor(name: string): HostActor {
    let h = this.hosts.get(name);
    if (!h) {
      h = new HostActor({
        name, bus: this.opts.bus, journal: this.opts.journal, hub: this.hub, log: this.opts.log, timing: this.opts.timing, passivation: this.passivation,
        logic: this.logic,
      });
      this.hosts.set(name, h);
    }
    return h;
  }

  private spawnArq(input: ArqInput, record?: MachineRecord): ArqActor {
    const arq: ArqActor = new ArqActor({
      input,
      record,
      logic: this.arqLogic,
      journal: this.opts.journal,
      hub: this.hub,
      log: this.opts.log,
      onDeleted: () => this.forgetArq(arq),
    });
    this.arqs.set(input.uuid, arq);
    return arq;
  }

  private async recover(): Promise<void> {
    const state = await this.opts.journal.load();
    this.documents.load(state.documents);
    this.driverAdmin.load(state.documents);
    const records = new Map<string, Map<string, MachineRecord>>();
    for (const a of state.accelerators) {
      const m = records.get(a.host) ?? new Map<string, MachineRecord>();
      m.set(a.id, a.record);
      records.set(a.host, m);
    }
    for (const h of state.hosts) {
      this.holders = undefined;
      this.hosts.set(h.host, new HostActor({
        name: h.host, bus: this.opts.bus, journal: this.opts.journal, hub: this.hub, log: this.opts.log, timing: this.opts.timing, passivation: this.passivation,
        record: h.record, drivers: h.drivers, devices: h.devices, acceleratorRecords: records.get(h.host),
        logic: this.logic,
      }));
    }
    this.adoptArqs(state.arqs);
  }
}
