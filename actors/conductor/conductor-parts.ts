import type { Logger } from 'pino';
import type { Bus } from '../../bus/index.js';
import type { acceleratorMachine } from '../../machines/index.js';
import type { ArqHold, ControlPlane, EventHub } from '../../model/index.js';
import type { Journal } from '../runtime/index.js';
import { DocumentStore, DriverAdmin, OrphanSweep, UsageWindows, type PlacementPort } from '../services/index.js';
import { AcceleratorDesk } from './accelerator-desk.js';
import type { RemoteArqOps } from './arq-binder.js';
import { ArqDesk } from './arq-desk.js';
import { FleetReads } from './fleet-reads.js';
import { HostDesk } from './host-desk.js';
import type { RetireTarget } from './host-retire.js';
import { LogReads } from './log-reads.js';
import { BusIntake } from './intake.js';
import { Rejoin } from './rejoin.js';
import { Rounds } from './rounds.js';
import { Supervisor } from './supervisor.js';
import type { Timing } from './timing.js';

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
  /** Whether `host` is ours by its lease but not rebuilt here yet (the HostRouter's answer, with several conductors). */
  hostPending?: (host: string) => boolean;
  /** The Placement sync beside this conductor, where one runs: each accelerator's sync state and each provider's allocations. */
  placement?: PlacementPort;
  /**
   * How long an unbind or delete waits for its release before answering with the committed intent
   * (`Unbinding`, `Deleting`) while reconciliation finishes it, and an operator's accelerator write
   * for its driver operation before answering it under way (`installing`…); below the api →
   * conductor timeout.
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

/** The pieces a Conductor is made of, each built once from its options (no setter slots). */
export interface ConductorParts {
  tree: Supervisor;
  usage: UsageWindows;
  reads: FleetReads;
  log: LogReads;
  documents: DocumentStore;
  desk: ArqDesk;
  acceleratorDesk: AcceleratorDesk;
  hostDesk: HostDesk;
  driverAdmin: DriverAdmin;
  intake: BusIntake;
  rounds: Rounds;
}

/** What the parts call back on the conductor that holds them. */
export interface ConductorHooks {
  hub: EventHub;
  /** The conductor itself, as the control plane the driver admin's instance attach and a host's retirement go through. */
  control: ControlPlane & RetireTarget;
}

/**
 * Wires the actor tree (Supervisor), what agents report (BusIntake), the periodic rounds (Rounds)
 * and the services beside them (actors/services/) for one conductor.
 */
export function buildConductorParts(opts: ConductorOptions, hooks: ConductorHooks): ConductorParts {
  // The tree and the intake wake the rounds, which are built last.
  let rounds: Rounds | undefined;
  const soon = (): void => rounds?.soon();
  const tree = new Supervisor({
    bus: opts.bus,
    journal: opts.journal,
    hub: hooks.hub,
    log: opts.log,
    timing: opts.timing,
    onChange: soon,
    ...(opts.acceleratorMachine ? { acceleratorMachine: opts.acceleratorMachine } : {}),
    ...(opts.restAfterMs !== undefined ? { restAfterMs: opts.restAfterMs } : {}),
    ...(opts.remoteArqs ? { remoteArqs: opts.remoteArqs } : {}),
    ...(opts.hostPending ? { hostPending: opts.hostPending } : {}),
  });
  const usage = new UsageWindows(opts.usageWindow ?? USAGE_WINDOW);
  const documents = new DocumentStore(opts.journal, opts.log.child({ subcomponent: 'documents' }));
  // A change answered 503 that the database had taken after all: memory follows the database.
  opts.journal.onLanded = (changes) => {
    tree.landed(changes);
    documents.landed(changes);
  };
  // With several conductors only the ARQ home knows the ARQs: it is asked, even by itself.
  const holds = (uuids: readonly string[]): Promise<Record<string, ArqHold | null>> =>
    opts.remoteArqs ? opts.remoteArqs.holds(uuids) : Promise.resolve(tree.arqHolds(uuids));
  const driverAdmin = new DriverAdmin({
    bus: opts.bus,
    journal: opts.journal,
    log: opts.log.child({ subcomponent: 'drivers' }),
    control: hooks.control,
    timeoutMs: opts.timing.driverOpTimeoutMs,
    settle: (id) => tree.acceleratorActor(id).flushed(),
  });
  const intake = new BusIntake({
    bus: opts.bus,
    tree,
    hub: hooks.hub,
    driverAdmin,
    log: opts.log,
    heartbeatIntervalMs: opts.timing.heartbeatIntervalMs,
    rejoin: new Rejoin({
      log: opts.log.child({ subcomponent: 'rejoin' }),
      journal: opts.journal,
      hub: hooks.hub,
      holds,
      // A Bound ARQ on the very handle, as an operator's attach makes one: Nova finds it when it rebuilds the guest.
      adopt: async (h) =>
        void (await driverAdmin.attachInstance(
          h.instanceUuid,
          { acceleratorId: h.acceleratorId, handleUuid: h.handleUuid, ...(h.projectId ? { projectId: h.projectId } : {}) },
          { actor: 'conductor' },
        )),
    }),
    onAgentBack: soon,
    ...(opts.usageWindow === 0 ? {} : { usage }),
  });
  rounds = new Rounds({
    tree,
    log: opts.log,
    everyMs: opts.reconcileEveryMs ?? RECONCILE_EVERY_MS,
    pruneUsage: () => usage.prune((id) => BusIntake.keepsUsageOf(tree.findAccelerator(id))),
    orphans: new OrphanSweep({
      held: () => tree.heldHandles(),
      holds,
      release: (h) => tree.binder.unbind(h.arqUuid, { acceleratorId: h.acceleratorId, handleUuid: h.handleUuid }, true, { actor: 'conductor' }),
      graceMs: opts.orphanGraceMs ?? ORPHAN_GRACE_MS,
      pageSize: 500,
      log: opts.log,
    }),
  });
  const reads = new FleetReads(tree, usage, opts.placement);
  const remote = opts.remoteArqs;
  const answerWithinMs = opts.releaseWaitMs ?? RELEASE_WAIT_MS;
  const desk = new ArqDesk({ tree, documents, releaseWaitMs: answerWithinMs });
  return {
    tree,
    usage,
    reads,
    log: new LogReads(opts.journal),
    documents,
    desk,
    acceleratorDesk: new AcceleratorDesk({
      tree,
      log: opts.log,
      answerWithinMs,
      ...(opts.placement ? { placement: opts.placement } : {}),
      // With several conductors the ARQ is the ARQ home's to mark (even when the home is this one).
      arqReleased: remote ? (uuid, reason, meta) => remote.released(uuid, reason, meta) : desk.released.bind(desk),
    }),
    hostDesk: new HostDesk({
      tree,
      reads,
      journal: opts.journal,
      log: opts.log,
      target: hooks.control,
      ...(opts.placement ? { placement: opts.placement } : {}),
    }),
    driverAdmin,
    intake,
    rounds,
  };
}
