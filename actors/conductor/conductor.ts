import {
  bindVerbs,
  CONTROL_READS,
  EventHub,
  type ConductorRooms,
  type ControlPlane,
  type ControlReads,
  type ControlVerbs,
  type FleetSource,
} from '../../model/index.js';
import type { AcceleratorRecord, Recovered } from '../runtime/index.js';
import type { DocumentStore, DriverAdmin, UsageWindows } from '../services/index.js';
import type { AcceleratorDesk } from './accelerator-desk.js';
import type { ArqDesk } from './arq-desk.js';
import { buildConductorParts, type ConductorOptions } from './conductor-parts.js';
import type { FleetReads } from './fleet-reads.js';
import type { HostActor } from './host-actor.js';
import type { HostDesk } from './host-desk.js';
import type { BusIntake } from './intake.js';
import type { LogReads } from './log-reads.js';
import type { Rounds } from './rounds.js';
import type { Supervisor } from './supervisor.js';
import { opDeadlineMs } from './timing.js';

export type { ConductorOptions } from './conductor-parts.js';

/** The rooms of one conductor that serve the call table, by the names its `handler`s use. */
export interface Rooms extends ConductorRooms {
  accelerators: AcceleratorDesk;
  arqs: ArqDesk;
  hosts: HostDesk;
  reads: FleetReads;
  log: LogReads;
  documents: DocumentStore;
  drivers: DriverAdmin;
}

// The facade's reads and verbs are its rooms' own methods, bound in the constructor (see below).
export interface Conductor extends ControlReads, ControlVerbs {}

/**
 * The control plane of one conductor: reads of the last committed views and writes that resolve
 * once committed. It is built from the call table (model/control-calls.ts): each verb is the
 * method of the room that owns the state it changes (`rooms`), bound here as it is — the
 * conductor itself only starts and stops its parts: the actor tree (Supervisor), what agents
 * report (BusIntake), the periodic rounds (Rounds) and the services beside them (actors/services/).
 */
export class Conductor implements ControlPlane, FleetSource {
  readonly hub = new EventHub();
  readonly documents: DocumentStore;
  /** Drivers per host (install / uninstall / update), backend services, instance attach (generic-driver spec). */
  readonly driverAdmin: DriverAdmin;
  /** Recent usage of the accelerators held here (telemetry; never in the database). */
  readonly usage: UsageWindows;
  readonly tree: Supervisor;
  readonly intake: BusIntake;
  readonly rounds: Rounds;
  /** Where each control call is handled (the call table's `handler`: `room.method`). */
  readonly rooms: Rooms;
  /** The tree's hosts and ARQs: what the roles, the responder and the metrics read. */
  readonly hosts: ReadonlyMap<string, HostActor>;
  readonly arqs: Supervisor['arqs'];
  /** The agents' reports refused or misaddressed, re-specified devices, re-joins under way (BusIntake's). */
  readonly reportStats: BusIntake['reportStats'];
  readonly respecified: BusIntake['respecified'];
  readonly rejoins: BusIntake['rejoins'];

  constructor(private readonly opts: ConductorOptions) {
    const parts = buildConductorParts(opts, { hub: this.hub, control: this });
    ({ tree: this.tree, usage: this.usage, documents: this.documents, driverAdmin: this.driverAdmin, intake: this.intake, rounds: this.rounds } = parts);
    this.rooms = {
      accelerators: parts.acceleratorDesk,
      arqs: parts.desk,
      hosts: parts.hostDesk,
      reads: parts.reads,
      log: parts.log,
      documents: parts.documents,
      drivers: parts.driverAdmin,
    };
    ({ hosts: this.hosts, arqs: this.arqs } = this.tree);
    ({ reportStats: this.reportStats, respecified: this.respecified, rejoins: this.rejoins } = this.intake);
    // No method in between: a call from the api runs the room's own code.
    for (const name of CONTROL_READS) Object.assign(this, { [name]: parts.reads[name].bind(parts.reads) });
    Object.assign(this, bindVerbs(this.rooms as unknown as Record<string, object>));
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

  async stop(drainMs = 0): Promise<void> {
    this.tree.refuseWrites();
    // Before the intake stops: the operations under way wait for their agents' answers.
    if (drainMs > 0) await this.tree.drain(drainMs);
    this.rounds.stop();
    this.intake.stop();
    await this.tree.stop();
  }

  /** Builds a host from its recorded state (a takeover: actors/cluster/host-router.ts); the intake forgets what it knew of it. */
  adoptHost(h: Recovered['hosts'][number], acceleratorRecords?: Map<string, AcceleratorRecord>): HostActor {
    this.intake.forgetHost(h.host);
    return this.tree.adoptHost(h, acceleratorRecords);
  }

  /** FleetSource: the deadline the accelerator machine gives `op` (its `opTimeout` delay). */
  opDeadlineMs(op: string): number {
    return opDeadlineMs(this.opts.timing, op);
  }

  /** Stops a host's actors without writing anything (its lease moved to another conductor, or it was retired). */
  releaseHost(name: string): boolean {
    this.intake.forgetHost(name);
    return this.tree.releaseHost(name);
  }
}
