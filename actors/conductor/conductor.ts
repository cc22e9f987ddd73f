import { CyborgError } from '../../errors/index.js';
import type { AcceleratorEvent, Binding, BoundTo } from '../../machines/index.js';
import {
  EventHub,
  type AcceleratorFilter,
  type AcceleratorUsage,
  type AcceleratorView,
  type ArqFilter,
  type ArqHold,
  type ArqView,
  type AttachHandleT,
  type AuditPage,
  type AuditQuery,
  bucketDigest,
  type ControlPlane,
  type FleetSource,
  type StateDigest,
  type DeviceT,
  type HostUsage,
  type HostView,
  type PlacementStatusView,
  type RelayoutRequest,
  type RequestMeta,
  type TransitionRecord,
} from '../../model/index.js';
import type { AcceleratorRecord, Recovered } from '../runtime/index.js';
import type { DocumentStore, DriverAdmin, UsageWindows } from '../services/index.js';
import type { AcceleratorActor } from './accelerator-actor.js';
import type { HostActor } from './host-actor.js';
import type { BusIntake } from './intake.js';
import { relayout } from './relayout.js';
import type { AcceleratorDesk } from './accelerator-desk.js';
import type { ArqDesk } from './arq-desk.js';
import { buildConductorParts, type ConductorOptions } from './conductor-parts.js';
import type { FleetReads } from './fleet-reads.js';
import { retireHost, type ForgettingJournal, type RetiredHost } from './host-retire.js';
import type { Rounds } from './rounds.js';
import type { Supervisor } from './supervisor.js';

export type { ConductorOptions } from './conductor-parts.js';

/**
 * The control plane of one conductor: reads of the last committed views and writes that resolve
 * once committed. It puts together the actor tree (Supervisor), what agents report (BusIntake),
 * the periodic rounds (Rounds) and the services beside them (actors/services/).
 */
export class Conductor implements ControlPlane, FleetSource {
  readonly hub = new EventHub();
  readonly documents: DocumentStore;
  /** Drivers per host (install / uninstall / update), backend services, instance attach (generic-driver spec). */
  readonly driverAdmin: DriverAdmin;
  /** Recent usage of the accelerators held here (telemetry; never in the database). */
  readonly usage: UsageWindows;
  readonly tree: Supervisor;
  private readonly intake: BusIntake;
  private readonly rounds: Rounds;
  private readonly reads: FleetReads;
  private readonly desk: ArqDesk;
  private readonly acceleratorDesk: AcceleratorDesk;
  private stopping = false;

  constructor(private readonly opts: ConductorOptions) {
    const parts = buildConductorParts(opts, {
      hub: this.hub,
      control: this,
      assertRunning: () => this.assertRunning(),
      arqReleased: (uuid, reason, meta) => this.arqReleased(uuid, reason, meta),
    });
    ({ tree: this.tree, usage: this.usage, reads: this.reads, documents: this.documents, desk: this.desk } = parts);
    ({ acceleratorDesk: this.acceleratorDesk, driverAdmin: this.driverAdmin, intake: this.intake, rounds: this.rounds } = parts);
  }

  /** Rebuilds the tree from the journal, then listens to agents and starts the rounds. */
  async start(): Promise<void> {
    const state = await this.opts.journal.load();
    this.documents.load(state.documents);
    this.driverAdmin.load(state.documents);
    this.tree.recover(state);
    this.intake.start();
    this.rounds.start();
    this.opts.log.info({ hosts: this.hosts.size, arqs: this.arqs.size }, 'conductor started');
    // Deletes and unbinds a crash or an earlier failure left unfinished.
    this.rounds.soon();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.rounds.stop();
    this.intake.stop();
    await this.tree.stop();
  }

  // --- the tree, as the roles, the responder and the metrics read it -----------------------

  get hosts(): ReadonlyMap<string, HostActor> {
    return this.tree.hosts;
  }

  get arqs(): Supervisor['arqs'] {
    return this.tree.arqs;
  }

  get reportStats(): BusIntake['reportStats'] {
    return this.intake.reportStats;
  }

  get respecified(): BusIntake['respecified'] {
    return this.intake.respecified;
  }

  get rejoins(): BusIntake['rejoins'] {
    return this.intake.rejoins;
  }

  /** Retries unfinished deletes and unbinds now; returns how many (see Rounds). */
  reconcile(force = true): number {
    return this.rounds.reconcile(force);
  }

  /** Builds a host from its recorded state (a takeover: actors/cluster/host-router.ts). */
  adoptHost(h: Recovered['hosts'][number], acceleratorRecords?: Map<string, AcceleratorRecord>): HostActor {
    this.intake.forgetHost(h.host);
    return this.tree.adoptHost(h, acceleratorRecords);
  }

  /** Stops a host's actors without writing anything: its lease moved to another conductor. */
  releaseHost(name: string): boolean {
    this.intake.forgetHost(name);
    return this.tree.releaseHost(name);
  }

  adoptArqs(arqs: Recovered['arqs']): void {
    this.tree.adoptArqs(arqs);
  }

  dropArqs(): void {
    this.tree.dropArqs();
  }

  acceleratorActor(id: string): AcceleratorActor {
    return this.tree.acceleratorActor(id);
  }

  /** The accelerator's actor if one of this conductor's hosts has it. */
  findAccelerator(id: string): AcceleratorActor | undefined {
    return this.tree.findAccelerator(id);
  }

  /** Which of this conductor's hosts holds accelerator `id` (the report door asks for each id a report names: no walk). */
  holderOf(id: string): string | undefined {
    return this.tree.holderOf(id);
  }

  get passivation(): Supervisor['passivation'] {
    return this.tree.passivation;
  }

  arqHolds(uuids: readonly string[]): Record<string, ArqHold | null> {
    return this.desk.holds(uuids);
  }

  // --- reads (last committed view) ----------------------------------------------------------

  listHosts(): HostView[] {
    return this.reads.listHosts();
  }
  getHost(name: string): HostView {
    return this.reads.host(name).view();
  }
  hostInventory(name: string): DeviceT[] {
    return this.reads.hostInventory(name);
  }
  listAccelerators(filter: AcceleratorFilter = {}): AcceleratorView[] {
    return this.reads.listAccelerators(filter);
  }

  placementStatus(id: string): PlacementStatusView | undefined {
    return this.opts.placement?.status(id);
  }

  getAccelerator(id: string): AcceleratorView {
    return this.tree.acceleratorActor(id).view();
  }

  getAcceleratorByRp(rpUuid: string): AcceleratorView | undefined {
    return this.tree.acceleratorByRp(rpUuid)?.view();
  }

  attachHandle(acceleratorId: string, handleUuid: string): AttachHandleT | undefined {
    return this.reads.attachHandle(acceleratorId, handleUuid);
  }

  history(id: string, limit = 200): Promise<TransitionRecord[]> {
    return this.opts.journal.history(id, limit);
  }

  /** The fleet's audit log, filtered and paged, from the journal's database. */
  audit(q: AuditQuery): Promise<AuditPage> {
    if (!this.opts.journal.audit) throw new CyborgError('persistence.unavailable', 'this conductor keeps no audit log');
    return this.opts.journal.audit(q);
  }

  acceleratorUsage(id: string): AcceleratorUsage {
    return this.reads.acceleratorUsage(id);
  }
  hostUsage(name: string): HostUsage {
    return this.reads.hostUsage(name);
  }
  listArqs(filter: ArqFilter = {}): ArqView[] {
    return this.reads.listArqs(filter);
  }

  getArq(uuid: string): ArqView {
    return this.tree.arqActor(uuid).view();
  }

  // --- writes (resolve once committed) ------------------------------------------------------

  act(id: string, event: AcceleratorEvent, meta: RequestMeta = {}): Promise<AcceleratorView> {
    return this.acceleratorDesk.act(id, event, meta);
  }
  /** Attaches an instance to the first free attach handle (the operator's attach, without an ARQ). */
  attach(id: string, req: { instanceUuid: string; projectId?: string }, meta: RequestMeta = {}): Promise<AcceleratorView> {
    return this.acceleratorDesk.attach(id, req, meta);
  }
  detach(id: string, req: { handleUuid?: string; instanceUuid?: string }, meta: RequestMeta = {}): Promise<AcceleratorView> {
    return this.acceleratorDesk.detach(id, req, meta);
  }

  /** The database's committed states as digests (model/digest.ts): what an api compares its view with. */
  async stateDigest(): Promise<StateDigest> {
    if (!this.opts.journal.committedStates) throw new CyborgError('persistence.unavailable', "this conductor's journal keeps no committed states apart");
    const { accelerators, arqs } = await this.opts.journal.committedStates();
    return { accelerators: bucketDigest(accelerators), arqs: bucketDigest(arqs) };
  }

  /** Retires a lost host that holds nothing (host-retire.ts); the journal must forget hosts. */
  retireHost(name: string, meta: RequestMeta = {}): Promise<RetiredHost> {
    this.assertRunning();
    const journal = this.opts.journal;
    if (!journal.forgetHost) throw new CyborgError('persistence.unavailable', "this conductor's journal cannot forget a host");
    return retireHost(this, journal as ForgettingJournal, name, meta, this.opts.log);
  }

  async relayout(hostName: string, req: RelayoutRequest, meta: RequestMeta = {}): Promise<AcceleratorView[]> {
    this.assertRunning();
    return relayout(this.reads.host(hostName), req, meta, { journal: this.opts.journal, allocations: this.opts.placement?.allocations ?? null });
  }

  // --- ARQs (ArqDesk) ------------------------------------------------------------------------

  createArq(req: { deviceProfileName: string; deviceProfileGroupId: number; projectId: string | null }, meta: RequestMeta = {}): Promise<ArqView> {
    return this.desk.create(req, meta);
  }
  bindArq(uuid: string, binding: Binding, meta: RequestMeta = {}): Promise<ArqView> {
    return this.desk.bind(uuid, binding, meta);
  }
  unbindArq(uuid: string, meta: RequestMeta = {}): Promise<ArqView> {
    return this.desk.unbind(uuid, meta);
  }
  deleteArq(uuid: string, meta: RequestMeta = {}): Promise<ArqView> {
    return this.desk.delete(uuid, meta);
  }
  attachForArq(arqUuid: string, binding: Binding): Promise<BoundTo> {
    return this.desk.attachFor(arqUuid, binding);
  }
  releaseForArq(arqUuid: string, boundTo: BoundTo | null, asOwner = false): Promise<boolean> {
    return this.desk.releaseFor(arqUuid, boundTo, asOwner);
  }
  arqReleased(arqUuid: string, reason: string, meta: RequestMeta = {}): Promise<boolean> {
    return this.desk.released(arqUuid, reason, meta);
  }

  private assertRunning(): void {
    if (this.stopping) throw new CyborgError('service.shutting_down', 'the conductor is shutting down');
  }
}
