import type { Logger } from 'pino';
import type { Bus, Unsubscribe } from '../../bus/index.js';
import {
  HealthMessage,
  HeartbeatMessage,
  InventoryMessage,
  InventoryReply,
  ProgressMessage,
  RegisterMessage,
  RegisterReply,
  TelemetryMessage,
  type InventoryMsg,
  type TelemetryMsg,
} from '../../bus/index.js';
import { Subjects } from '../../bus/index.js';
import { CyborgError } from '../../errors/index.js';
import type { DeviceT, EventHub } from '../../model/index.js';
import type { DriverAdmin, UsageWindows } from '../services/index.js';
import type { AcceleratorActor } from './accelerator-actor.js';
import type { HostActor } from './host-actor.js';
import { inventoryRefusal, reportFromItsHost, type ReportStats } from './report-host.js';
import type { Rejoin, RejoinOutcome } from './rejoin.js';
import type { Supervisor } from './supervisor.js';
import { AcceleratorStates } from '../../machines/index.js';

export interface IntakeOptions {
  bus: Bus;
  tree: Supervisor;
  hub: EventHub;
  driverAdmin: DriverAdmin;
  rejoin: Rejoin;
  /** Absent: no telemetry is kept (`[conductor] usage_window = 0`). */
  usage?: UsageWindows;
  heartbeatIntervalMs: number;
  /** An agent is back: releases that waited for it can go on. */
  onAgentBack: () => void;
  log: Logger;
}

/**
 * What the conductor hears from agents: registrations, inventories, heartbeats, health checks,
 * telemetry and programming progress. Each report is checked at the door (its subject names its
 * host; an inventory claims no other host's devices) and handed to the host's actor.
 */
export class BusIntake {
  /** Agent reports refused at the door (exposed as metrics by the role). */
  readonly reportStats: ReportStats = { misaddressedReports: 0, refusedReports: 0 };
  /** The last re-join comparison of each host, while it runs or once done (operators' checks, tests). */
  readonly rejoins = new Map<string, Promise<RejoinOutcome>>();
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
  private subs: Unsubscribe[] = [];
  private stopping = false;

  constructor(private readonly opts: IntakeOptions) {}

  start(): void {
    const { bus, tree, log } = this.opts;
    const queue = { queue: 'cyborg-conductors' };
    this.subs.push(
      bus.respond(
        Subjects.register,
        RegisterMessage,
        RegisterReply,
        async (msg, subject) => {
          this.fromItsHost(subject, msg);
          // The recorded driver states (install-driver & co.) win over what a restarted agent ships.
          const { drivers, persisted } = this.opts.driverAdmin.onRegister(msg.host, msg.drivers);
          const registered = tree.hostFor(msg.host).register(
            msg.agentId,
            msg.epoch ?? 0,
            drivers.map((d) => ({ name: d.name, version: d.version })),
          );
          await Promise.all([persisted, registered]);
          log.info({ host: msg.host, agentId: msg.agentId, drivers: msg.drivers }, 'agent registered');
          this.opts.onAgentBack();
          return { ok: true, heartbeatIntervalMs: this.opts.heartbeatIntervalMs, drivers };
        },
        queue,
      ),
      bus.respond(
        Subjects.inventory,
        InventoryMessage,
        InventoryReply,
        async (msg, subject) => {
          this.fromItsHost(subject, msg);
          this.believable(msg);
          const host = tree.hostFor(msg.host);
          const recorded = host.inventory();
          const respecified = await host.applyInventory(msg.devices, { actor: `agent:${msg.agentId}` }, msg.unobservedDrivers);
          if (respecified.length > 0) for (const l of this.respecifiedListeners) l(respecified);
          tree.indexHost(host);
          // After the answer: the agent's commands for it are run while its report is acknowledged.
          if (msg.observed && !this.stopping) this.compareRejoin(host, msg.agentId, recorded, msg.observed);
          return { ok: true, accelerators: host.accelerators.size };
        },
        queue,
      ),
      bus.subscribe(
        Subjects.heartbeat,
        HeartbeatMessage,
        (msg, subject) => {
          if (!reportFromItsHost(subject, msg, this.reportStats, log)) return;
          const host = tree.hosts.get(msg.host);
          if (host) host.heartbeat(msg.agentId, msg.epoch, msg.seq);
          else log.debug({ host: msg.host }, 'heartbeat from a host that has not registered');
        },
        queue,
      ),
      bus.subscribe(
        Subjects.health,
        HealthMessage,
        (msg, subject) => {
          if (!reportFromItsHost(subject, msg, this.reportStats, log)) return;
          const host = tree.hosts.get(msg.host);
          if (host) host.applyHealth(msg);
          else log.warn({ host: msg.host, agentId: msg.agentId, checks: msg.checks.length }, 'health checks from a host that has not registered: dropped');
        },
        queue,
      ),
      // Every conductor hears every host's telemetry (no queue group) and keeps its own hosts'.
      ...(this.opts.usage
        ? [
            bus.subscribe(Subjects.telemetryAll, TelemetryMessage, (msg, subject) => {
              // Only the host's own subject may carry its samples (its NATS credentials allow no other).
              if (subject === Subjects.telemetry(msg.host)) this.recordUsage(msg);
              else this.reportStats.misaddressedReports++;
            }),
          ]
        : []),
      // Steps of a programming under way, logged by the conductor holding the host against the
      // accelerator (a bind waiting on it shows why it takes minutes); said, never stored.
      bus.subscribe(Subjects.progressAll, ProgressMessage, (msg, subject) => {
        if (subject !== Subjects.progress(msg.host)) {
          this.reportStats.misaddressedReports++;
          return;
        }
        if (!tree.hosts.has(msg.host)) return;
        log.info(
          { host: msg.host, acceleratorId: msg.deployableUuid, op: msg.op, key: msg.key, phase: msg.phase, progress: msg.message },
          'programming progress',
        );
      }),
      // A removed accelerator's window goes at once (the rounds' prune catches the rest).
      this.opts.hub.subscribe((ev) => {
        if (ev.kind === 'accelerator' && ev.to === AcceleratorStates.removed) this.opts.usage?.forget(ev.id);
      }),
    );
  }

  stop(): void {
    this.stopping = true;
    for (const u of this.subs) u();
    this.subs = [];
  }

  /** A host adopted or released: its next agent session is compared afresh. */
  forgetHost(name: string): void {
    this.opts.rejoin.forget(name);
  }

  /** Whether a usage window is kept for this accelerator (a removed one's goes with it: metrics/index.ts). */
  static keepsUsageOf(a: AcceleratorActor | undefined): a is AcceleratorActor {
    return a !== undefined && a.state !== AcceleratorStates.removed;
  }

  /** The first report of an agent session is compared with what instances hold (once per session). */
  private compareRejoin(host: HostActor, agentId: string, recorded: DeviceT[], observed: NonNullable<InventoryMsg['observed']>): void {
    const run = this.opts.rejoin.compare(host, agentId, recorded, observed);
    if (!run) return;
    run.catch((err: unknown) => this.opts.log.error({ err, host: host.name }, 're-join reconciliation failed; the next agent session compares again'));
    this.rejoins.set(host.name, run);
  }

  /** Refuses (logged, counted, answered with the reason) an inventory that claims what it may not. */
  private believable(msg: InventoryMsg): void {
    const { tree } = this.opts;
    const why = inventoryRefusal(
      msg.host,
      msg.devices,
      (h) => tree.hosts.has(h),
      (id) => tree.holderOf(id),
    );
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

  /** Keeps a host's usage samples of the accelerators held here; others are counted and dropped (never thrown). */
  private recordUsage(msg: TelemetryMsg): void {
    const host = this.opts.tree.hosts.get(msg.host);
    const usage = this.opts.usage;
    if (!host || !usage) return;
    const now = Date.now();
    for (const u of msg.usage) {
      if (BusIntake.keepsUsageOf(host.accelerators.get(u.deployableUuid))) usage.record(u.deployableUuid, msg.at, u, now);
      else usage.unknown();
    }
  }
}
