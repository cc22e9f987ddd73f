import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Static, TSchema } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { Gauge } from 'prom-client';
import { ARQ_HOME, ArqHome, FencedJournal, HostRouter, LeaseTable } from '../actors/cluster/index.js';
import { Conductor, ReportDoor, type ConductorOptions, type ReportStats } from '../actors/conductor/index.js';
import { placementFromConfig } from './placement.js';
import { metricsProjectNames } from './project-names.js';
import type { Journal } from '../actors/runtime/index.js';
import type { Bus, MessageHandler, SubscribeOptions, Unsubscribe } from '../bus/index.js';
import { connectNats, type NatsBus } from '../bus/index.js';
import type { HeartbeatMsg } from '../bus/index.js';
import { Subjects } from '../bus/index.js';
import type { Config } from '../config/index.js';
import { remoteArqCalls } from '../control/index.js';
import { serveControlPlane, ViewPublisher } from '../control/index.js';
import { databaseChecks, databaseProbe, recordedHoldersOf } from '../db/index.js';
import { startHealthServer, type HealthServer, Metrics, watchFlushes } from '../metrics/index.js';
import { startNovaNotifier } from '../openstack/nova.js';
import { startAutoEnable } from './auto-enable.js';
import { serveService } from './service.js';
import { keepRoster } from './roster.js';
import { releaseInfo } from './release-info.js';
import { MEMORY_DATABASE, natsProblem, natsWaitText, requireDatabase, roleBus, roleJournal, startingSteps } from './shared.js';

/** How long a readiness probe of the database may take (below the api's readiness call's 1 s). */
const READINESS_PROBE_MS = 800;
/**
 * How long a stopping conductor lets its operations under way end (a bind waiting for its agent,
 * a detach) before it gives its leases back: a restart's binds end Bound, not "interrupted".
 */
const DRAIN_MS = 10_000;

export interface RunningConductor {
  id: string;
  conductor: Conductor;
  bus: NatsBus;
  journal: Journal;
  lease: LeaseTable | undefined;
  metrics: Metrics;
  health: HealthServer | undefined;
  /** Stops in order: stop taking work, flush, give the leases back, drain NATS, close the journal. */
  stop(): Promise<void>;
}

/** The lease table and what is built on it (several conductors): absent with leases off. */
interface Cluster {
  lease: LeaseTable;
  leaseNc: NatsConnection;
  /** Stops announcing this conductor in the roster (release and protocol, read by upgrade-check). */
  stopRoster: () => Promise<void>;
  fenced: FencedJournal;
  router: HostRouter;
  arqHome: ArqHome;
}

/**
 * The conductor, for the parts that must exist before it (the bus it is built on wraps them) but
 * reach it only once messages flow: set right after it is built, read from then on.
 */
class Later<T> {
  private value: T | undefined;
  set(v: T): T {
    this.value = v;
    return v;
  }
  get(): T {
    // untyped: a wiring mistake in this file (a part reached the conductor before it was built); it never leaves the process.
    if (this.value === undefined) throw new Error('the conductor is not built yet');
    return this.value;
  }
}

/**
 * `cyborg conductor`: the actor tree and all state, over NATS. With leases on (the default),
 * several conductors share the hosts: each agent report is handled by the holder of its host's
 * lease (claimed on first sight, taken over when its holder's lease expires), and every write is
 * fenced by that lease. After each commit it publishes the transition and the changed views.
 */
export async function startConductor(config: Config, log: Logger, deps: { journal?: Journal } = {}): Promise<RunningConductor> {
  if (!deps.journal) requireDatabase(config);
  const d = config.distributed;
  const id = d.conductorId ?? `${hostname()}-${randomUUID().slice(0, 8)}`;
  // The lease table, the host router and the ARQ home bind the id on their own lines (a logger with
  // it already would repeat the key); the role's other lines get it here.
  const idless = log.child({ role: 'conductor' });
  log = idless.child({ conductorId: id });
  const metrics = new Metrics('conductor');
  // Listening before it waits for anything: `/readyz` names what it waits for (NATS, the database).
  const health = d.metricsPort >= 0 ? await startHealthServer({ address: config.listen.address, port: d.metricsPort, metrics, log }) : undefined;
  const step = startingSteps(health);
  const bus = await step(natsWaitText(config), () => roleBus(config, log, `cyborg-conductor-${id}`, metrics));
  const inner = deps.journal ?? (await step('the database ([database] connection)', () => roleJournal(config, log)));
  const later = new Later<Conductor>();
  const publisher = new Later<ViewPublisher>();
  const cluster = d.leases ? await startCluster(config, id, idless, bus, inner, later, publisher, step) : undefined;
  const journal: Journal = cluster?.fenced ?? inner;
  const door = reportDoor(later, inner, log);
  const conductorBus = door.wrap(observeHeartbeats(cluster ? cluster.router.wrap(bus) : bus, (m) => metrics.observeHeartbeat(m.sentAt)));
  // Each conductor keeps Placement in sync for the hosts it owns (PLACEMENT_URL; Nova creates the roots).
  const link = placementFromConfig(config, log.child({ component: 'placement' }));
  const conductor = later.set(new Conductor(conductorOptions(config, id, log, conductorBus, bus, journal, link.port, cluster, later)));
  publisher.set(new ViewPublisher(bus, conductor, id));
  await step('its state from the database', () => conductor.start());
  // Someone must hold the ARQs from the start: Nova lists them before it binds any.
  void cluster?.arqHome.where().catch((err: unknown) => log.error({ err }, 'could not settle the ARQ home'));
  // The conductor that resolves a bind tells Nova (with several, the ARQ home): one event per bind.
  const nova = startNovaNotifier(config, conductor, log.child({ component: 'nova' }));
  const placement = link.start(conductor);
  const offAutoEnable = config.agent.autoEnable ? startAutoEnable(conductor, log.child({ component: 'auto-enable' })) : undefined;
  watchConductor(metrics, conductor, inner, door, config);
  const offs = serveConductor(config, id, log, bus, conductor, publisher.get(), inner, journal, metrics, cluster);
  serveHealth(health, id, bus, inner, conductor, cluster);
  log.info({ leases: d.leases, hosts: conductor.hosts.size, metricsPort: health?.port }, 'conductor role up');
  let stopped: Promise<void> | undefined;
  return {
    id,
    conductor,
    bus,
    journal,
    lease: cluster?.lease,
    metrics,
    health,
    stop: () =>
      (stopped ??= (async () => {
        for (const o of offs) o();
        offAutoEnable?.();
        placement?.stop();
        await conductor.stop(DRAIN_MS);
        await nova.stop();
        publisher.get().stop();
        await cluster?.stopRoster();
        await cluster?.lease.stop();
        await cluster?.leaseNc.drain().catch(() => undefined);
        await health?.close();
        await bus.close();
        await journal.close();
      })()),
  };
}

/**
 * The lease table on its own NATS connection, the fenced journal, the host router and the ARQ
 * home. A lease renewal must not wait behind a flood of agent reports in the main socket, and it
 * reconnects as fast as the main one (nats.js waits 2 s by default): after a NATS outage the main
 * connection must not serve calls for seconds while the lease lapses unrenewed.
 */
async function startCluster(
  config: Config,
  id: string,
  log: Logger,
  bus: NatsBus,
  inner: Journal,
  conductor: Later<Conductor>,
  publisher: Later<ViewPublisher>,
  step: ReturnType<typeof startingSteps>,
): Promise<Cluster> {
  const d = config.distributed;
  const bucket = `${d.subjectPrefix ? `${d.subjectPrefix}_` : ''}cyborg_leases`;
  const { leaseNc, kv } = await step(`the lease bucket ${bucket} in NATS JetStream`, async () => {
    const nc = await connectNats(config.natsUrl!, config.nats, { name: `cyborg-conductor-${id}-lease` });
    return { leaseNc: nc, kv: await new Kvm(nc).create(bucket, { history: 1 }) };
  });
  const stopRoster = keepRoster(kv, bus, id, config.host, log);
  // The router and the ARQ home are built on the lease below: its callbacks reach them once it runs.
  const parts: { router?: HostRouter; arqHome?: ArqHome } = {};
  const lease = new LeaseTable({
    kv,
    conductorId: id,
    ttlMs: d.leaseTtlMs,
    renewMs: d.leaseRenewMs,
    log,
    onLost: (hosts) => {
      if (hosts.includes(ARQ_HOME)) parts.arqHome?.lost();
      parts.router?.release(hosts.filter((h) => h !== ARQ_HOME));
    },
    onOrphans: (hosts) => {
      const real = hosts.filter((h) => h !== ARQ_HOME);
      if (real.length > 0) void parts.router?.takeOver(real).catch((err: unknown) => log.error({ err, conductorId: id }, 'takeover failed'));
      // The ARQ home died: take it over now, not at the next ARQ call (Nova is waiting on binds).
      if (real.length < hosts.length) void parts.arqHome?.where().catch((err: unknown) => log.error({ err, conductorId: id }, 'ARQ home takeover failed'));
    },
  });
  await step('its leases in NATS JetStream', () => lease.start());
  const fenced = new FencedJournal(inner, lease);
  const router = (parts.router = new HostRouter({
    bus,
    // Reached when a report or a lease change comes, once the conductor runs.
    conductor: {
      hasHost: (h) => conductor.get().hosts.has(h),
      adoptHost: (h, records) => conductor.get().adoptHost(h, records),
      releaseHost: (h) => conductor.get().releaseHost(h),
      reportStats: () => conductor.get().reportStats,
    },
    lease,
    journal: fenced,
    log,
    forwardTimeoutMs: d.requestTimeoutMs,
    // A health report for a host whose holder died is kept trying until its lease has expired and been claimed.
    redeliverForMs: 2 * d.leaseTtlMs + d.requestTimeoutMs,
    onAdopted: (hosts) => hosts.forEach((h) => publisher.get().adopted(h)),
  }));
  const arqHome = (parts.arqHome = new ArqHome({
    conductorId: id,
    lease,
    log,
    load: async () => {
      const [arqs, documents] = await Promise.all([fenced.loadArqs(), fenced.loadDocuments()]);
      return { arqs, documents };
    },
    adopt: (state) => {
      conductor.get().tree.adoptArqs(state.arqs);
      conductor.get().documents.load(state.documents);
    },
    drop: () => conductor.get().tree.dropArqs(),
  }));
  return { lease, leaseNc, stopRoster, fenced, router, arqHome };
}

/** Agents' inventories pass this door first: an agent speaks only for its own host's devices, checked against this conductor's memory and the database's record of every host. */
function reportDoor(conductor: Later<Conductor>, inner: Journal, log: Logger): ReportDoor {
  const recorded = recordedHoldersOf(inner);
  return new ReportDoor({
    known: (h) => conductor.get().hosts.has(h),
    heldHere: (id) => conductor.get().tree.holderOf(id),
    inventoryOf: (h) => conductor.get().hosts.get(h)?.inventory(),
    ...(recorded ? { recorded } : {}),
    log: log.child({ component: 'report-door' }),
  });
}

function conductorOptions(
  config: Config,
  id: string,
  log: Logger,
  conductorBus: Bus,
  bus: NatsBus,
  journal: Journal,
  placement: ConductorOptions['placement'],
  cluster: Cluster | undefined,
  conductor: Later<Conductor>,
): ConductorOptions {
  const d = config.distributed;
  const hostPending = cluster ? (h: string): boolean => cluster.router.rebuilding(h) : undefined;
  return {
    bus: conductorBus,
    journal,
    log,
    timing: config.timing,
    usageWindow: config.conductor.usageWindow,
    ...(placement ? { placement } : {}),
    ...(hostPending ? { hostPending } : {}),
    ...(cluster
      ? {
          // The host an ARQ's binding names (read when its unbind looks for the conductor holding it).
          remoteArqs: remoteArqCalls(bus, cluster.lease, id, d.requestTimeoutMs, (uuid) => conductor.get().arqs.get(uuid)?.view().binding?.hostname, {
            rebuilding: (h) => hostPending?.(h) ?? false,
            adopted: (h) => conductor.get().hosts.has(h),
            releaseHere: (uuid, held) => conductor.get().tree.binder.unbind(uuid, held, true),
            attachHere: (uuid, b) => conductor.get().tree.binder.bind(uuid, b, true),
            takeoverWaitMs: 2 * d.leaseTtlMs + d.requestTimeoutMs,
          }),
        }
      : {}),
  };
}

/** The conductor's metrics: its tree, its journal, the reports refused at the door. */
function watchConductor(metrics: Metrics, conductor: Conductor, inner: Journal, door: ReportDoor, config: Config): void {
  const projectName = metricsProjectNames(config);
  metrics.watchConductor(conductor, { consumerLabels: config.conductor.metricsConsumerLabels, ...(projectName ? { projectName } : {}) });
  watchJournal(metrics, inner);
  // cyborg_conductor_misaddressed_reports: agent reports naming another host than their subject's.
  metrics.exposeCounters('cyborg_conductor', {
    get misaddressedReports() {
      return conductor.reportStats.misaddressedReports;
    },
  });
  exposeRefusals(metrics, door, conductor.reportStats);
}

/** The control plane on the bus (the call table's responder) and the service's own info and stats. */
function serveConductor(
  config: Config,
  id: string,
  log: Logger,
  bus: NatsBus,
  conductor: Conductor,
  publisher: ViewPublisher,
  inner: Journal,
  journal: Journal,
  metrics: Metrics,
  cluster: Cluster | undefined,
): Unsubscribe[] {
  const d = config.distributed;
  const lease = cluster?.lease;
  return [
    serveControlPlane({
      bus,
      conductor,
      conductorId: id,
      publisher,
      timeoutMs: d.requestTimeoutMs,
      log,
      ...(lease ? { ownerOf: (h: string) => lease.ownerOf(h), liveConductors: () => lease.liveConductors() } : {}),
      ...(cluster
        ? {
            settled: (h: string) => cluster.router.settled(h),
            arqHome: cluster.arqHome,
            claimOrphan: async (h: string) => {
              if (!cluster.lease.recorded(h)) return undefined;
              const r = await cluster.router.route(h);
              return r.mine ? id : (r.owner ?? null);
            },
          }
        : {}),
      // A round trip with a deadline: a partitioned database hangs without an error.
      databaseProblem: databaseProbe(inner, READINESS_PROBE_MS) ?? (() => undefined),
      ...(lease ? { hostsProblem: () => takeoverProblem(journal as FencedJournal, lease, id) } : {}),
    }),
    serveService(bus, 'conductor', id, {
      info: () => ({
        leases: d.leases,
        subjectPrefix: d.subjectPrefix ?? null,
        database: config.databaseUrl && config.databaseUrl !== MEMORY_DATABASE ? 'postgresql' : 'memory',
        ...releaseInfo(bus),
      }),
      stats: (req) => {
        const out = stats(conductor, metrics, lease);
        if (req.resetWindow) metrics.lagWindow.reset();
        return out;
      },
    }),
  ];
}

/** The health server's answers, once the conductor is built (it listened from the start: `/readyz` said what it waited for). */
function serveHealth(health: HealthServer | undefined, id: string, bus: NatsBus, inner: Journal, conductor: Conductor, cluster: Cluster | undefined): void {
  const lease = cluster?.lease;
  health?.serve({
    healthy: () => ({
      ok: !bus.nc.isClosed() && (lease?.valid() ?? true),
      conductorId: id,
      hosts: conductor.hosts.size,
      leaseValid: lease?.valid() ?? null,
    }),
    // Not ready while its database or NATS is away: it answers 503 then, and recovers by itself.
    ready: () => {
      const database = databaseChecks(inner).database?.();
      const nats = natsProblem(bus);
      return { ok: !nats && (lease?.valid() ?? true) && !database, conductorId: id, database: database ?? 'ok', nats: nats ?? 'ok', ...releaseInfo(bus) };
    },
  });
}

/** What STATS answers: the actor tree's size and the heartbeat lag over the recent window. */
function stats(conductor: Conductor, metrics: Metrics, lease: LeaseTable | undefined): Record<string, unknown> {
  let accelerators = 0;
  const hosts: Record<string, number> = {};
  for (const h of conductor.hosts.values()) {
    accelerators += h.accelerators.size;
    hosts[h.state] = (hosts[h.state] ?? 0) + 1;
  }
  return {
    hosts,
    accelerators,
    arqs: conductor.arqs.size,
    heartbeats: metrics.lagWindow.count,
    heartbeatLagMs: { p50: metrics.lagWindow.percentile(50), p99: metrics.lagWindow.percentile(99), max: metrics.lagWindow.percentile(100) },
    ownedHosts: lease?.ownedHosts().filter((h) => h !== ARQ_HOME).length ?? null,
    arqHome: lease ? lease.owns(ARQ_HOME) : null,
    liveConductors: lease?.liveConductors() ?? null,
  };
}

/** Journal statistics, when the journal keeps them (the PostgreSQL one does), as scrape-time gauges. */
function watchJournal(metrics: Metrics, journal: Journal): void {
  watchFlushes(metrics, journal);
  const s = (journal as { stats?: Record<string, number> }).stats;
  if (!s) return;
  metrics.exposeCounters('cyborg_journal', s);
}

/**
 * `cyborg_conductor_refused_reports{reason}`: agent reports refused at the door, by why (report-host.ts);
 * the conductor's own late inventory check (a race the door could not see) counts as `inventory_check`.
 */
function exposeRefusals(metrics: Metrics, door: ReportDoor, stats: ReportStats): void {
  new Gauge({
    name: 'cyborg_conductor_refused_reports',
    help: 'agent reports refused since start, by reason',
    labelNames: ['reason'],
    registers: [metrics.registry],
    collect() {
      for (const [reason, n] of Object.entries(door.refused)) this.set({ reason }, reason === 'misaddressed' ? n + stats.misaddressedReports : n);
      this.set({ reason: 'inventory_check' }, stats.refusedReports);
    },
  });
}

/** A Bus decorator that times each heartbeat the conductor actually processes. */
function observeHeartbeats(inner: Bus, observe: (m: HeartbeatMsg) => void): Bus {
  return {
    publish: (s, schema, msg) => inner.publish(s, schema, msg),
    request: (s, a, b, msg, o) => inner.request(s, a, b, msg, o),
    respond: (s, a, b, h, o) => inner.respond(s, a, b, h, o),
    close: () => inner.close(),
    subscribe<M extends TSchema>(subject: string, schema: M, handler: MessageHandler<M>, opts?: SubscribeOptions): Unsubscribe {
      if (subject !== Subjects.heartbeat) return inner.subscribe(subject, schema, handler, opts);
      return inner.subscribe(
        subject,
        schema,
        async (msg: Static<M>, subj) => {
          await handler(msg, subj);
          observe(msg as HeartbeatMsg);
        },
        opts,
      );
    },
  };
}

/**
 * Hosts recorded at start that nobody alive holds but this conductor (a lease left by its previous
 * incarnation, or one whose holder died): it takes them over within a lease's time, and until then
 * the api's view lacks them, so the api is not ready. A host another live conductor holds is that
 * conductor's to report.
 */
function takeoverProblem(journal: FencedJournal, lease: LeaseTable, id: string): string | undefined {
  const pending = journal.unadopted().filter((h) => h !== ARQ_HOME && lease.recorded(h) && (lease.ownerOf(h) ?? id) === id);
  if (pending.length === 0) return undefined;
  const named = pending.slice(0, 5).join(', ') + (pending.length > 5 ? ` and ${pending.length - 5} more` : '');
  return `taking over ${pending.length} host(s) whose lease is not held by a live conductor (${named}); the view lacks them until then`;
}
