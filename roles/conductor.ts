import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Static, TSchema } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { Gauge } from 'prom-client';
import { ARQ_HOME, ArqHome, FencedJournal, HostRouter, LeaseTable } from '../actors/cluster/index.js';
import { Conductor, ReportDoor, type ReportStats } from '../actors/conductor/index.js';
import { placementFromConfig } from './placement.js';
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
import { MEMORY_DATABASE, natsProblem, requireDatabase, roleBus, roleJournal } from './shared.js';

/** How long a readiness probe of the database may take (below the api's readiness call's 1 s). */
const READINESS_PROBE_MS = 800;

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
  const bus = await roleBus(config, log, `cyborg-conductor-${id}`, metrics);
  const inner = deps.journal ?? (await roleJournal(config, log));
  let lease: LeaseTable | undefined;
  let leaseNc: NatsConnection | undefined;
  let router: HostRouter | undefined;
  let arqHome: ArqHome | undefined;
  let journal: Journal = inner;
  let publisher: ViewPublisher | undefined;
  if (d.leases) {
    const bucket = `${d.subjectPrefix ? `${d.subjectPrefix}_` : ''}cyborg_leases`;
    // Its own connection: a lease renewal must not wait behind a flood of agent reports in the socket.
    // It reconnects as fast as the main one (nats.js waits 2 s by default): after a NATS outage
    // the main connection must not serve calls for seconds while the lease lapses unrenewed.
    leaseNc = await connectNats(config.natsUrl!, config.nats, { name: `cyborg-conductor-${id}-lease` });
    const kv = await new Kvm(leaseNc).create(bucket, { history: 1 });
    lease = new LeaseTable({
      kv,
      conductorId: id,
      ttlMs: d.leaseTtlMs,
      renewMs: d.leaseRenewMs,
      log: idless,
      onLost: (hosts) => {
        if (hosts.includes(ARQ_HOME)) arqHome?.lost();
        router?.release(hosts.filter((h) => h !== ARQ_HOME));
      },
      onOrphans: (hosts) => {
        const real = hosts.filter((h) => h !== ARQ_HOME);
        if (real.length > 0) void router?.takeOver(real).catch((err: unknown) => log.error({ err }, 'takeover failed'));
        // The ARQ home died: take it over now, not at the next ARQ call (Nova is waiting on binds).
        if (real.length < hosts.length) void arqHome?.where().catch((err: unknown) => log.error({ err }, 'ARQ home takeover failed'));
      },
    });
    await lease.start();
    const fenced = new FencedJournal(inner, lease);
    journal = fenced;
    router = new HostRouter({
      bus,
      // The conductor is built below, on the bus this router wraps: reached when a report or a lease change comes.
      conductor: {
        hasHost: (h) => conductor.hosts.has(h),
        adoptHost: (h, records) => conductor.adoptHost(h, records),
        releaseHost: (h) => conductor.releaseHost(h),
        reportStats: () => conductor.reportStats,
      },
      lease,
      journal: fenced,
      log: idless,
      forwardTimeoutMs: d.requestTimeoutMs,
      // A health report for a host whose holder died is kept trying until its lease has expired and been claimed.
      redeliverForMs: 2 * d.leaseTtlMs + d.requestTimeoutMs,
      onAdopted: (hosts) => hosts.forEach((h) => publisher?.adopted(h)),
    });
  }
  // Agents' inventories pass the report door first: an agent speaks only for its own host's devices,
  // checked against this conductor's memory and the database's record of every host.
  const door = new ReportDoor({
    known: (h) => conductor.hosts.has(h),
    heldHere: (id) => conductor.holderOf(id),
    inventoryOf: (h) => conductor.hosts.get(h)?.inventory(),
    ...(recordedHoldersOf(inner) ? { recorded: recordedHoldersOf(inner)! } : {}),
    log: log.child({ component: 'report-door' }),
  });
  const conductorBus = door.wrap(observeHeartbeats(router ? router.wrap(bus) : bus, (m) => metrics.observeHeartbeat(m.sentAt)));
  // The host an ARQ's binding names (read when its unbind looks for the conductor holding it).
  const hostOfArq = (uuid: string): string | undefined => conductor.arqs.get(uuid)?.view().binding?.hostname;
  // Each conductor keeps Placement in sync for the hosts it owns (PLACEMENT_URL; Nova creates the roots).
  const link = placementFromConfig(config, log.child({ component: 'placement' }));
  const hostPending = router ? (h: string): boolean => router.rebuilding(h) : undefined;
  const conductor: Conductor = new Conductor({
    bus: conductorBus,
    journal,
    log,
    timing: config.timing,
    usageWindow: config.conductor.usageWindow,
    ...(link.port ? { placement: link.port } : {}),
    ...(hostPending ? { hostPending } : {}),
    ...(lease
      ? {
          remoteArqs: remoteArqCalls(bus, lease, id, d.requestTimeoutMs, hostOfArq, {
            rebuilding: (h) => hostPending?.(h) ?? false,
            adopted: (h) => conductor.hosts.has(h),
            takeoverWaitMs: 2 * d.leaseTtlMs + d.requestTimeoutMs,
          }),
        }
      : {}),
  });
  if (lease) {
    const fenced = journal as FencedJournal;
    arqHome = new ArqHome({
      conductorId: id,
      lease,
      log: idless,
      load: async () => {
        const [arqs, documents] = await Promise.all([fenced.loadArqs(), fenced.loadDocuments()]);
        return { arqs, documents };
      },
      adopt: (state) => {
        conductor.adoptArqs(state.arqs);
        conductor.documents.load(state.documents);
      },
      drop: () => conductor.dropArqs(),
    });
  }
  // Constant from here on: the closures below read them narrowed.
  const home = arqHome;
  const hostRouter = router;
  publisher = new ViewPublisher(bus, conductor, id);
  await conductor.start();
  // Someone must hold the ARQs from the start: Nova lists them before it binds any.
  void arqHome?.where().catch((err: unknown) => log.error({ err }, 'could not settle the ARQ home'));
  // The conductor that resolves a bind tells Nova (with several, the ARQ home): one event per bind.
  const nova = startNovaNotifier(config, conductor, log.child({ component: 'nova' }));
  const placement = link.start(conductor);
  metrics.watchConductor(conductor, { consumerLabels: config.conductor.metricsConsumerLabels });
  const offAutoEnable = config.agent.autoEnable ? startAutoEnable(conductor, log.child({ component: 'auto-enable' })) : undefined;
  watchJournal(metrics, inner);
  // cyborg_conductor_misaddressed_reports: agent reports naming another host than their subject's.
  metrics.exposeCounters('cyborg_conductor', {
    get misaddressedReports() {
      return conductor.reportStats.misaddressedReports;
    },
  });
  exposeRefusals(metrics, door, conductor.reportStats);
  const offs = [
    serveControlPlane({
      bus,
      conductor,
      conductorId: id,
      publisher,
      timeoutMs: d.requestTimeoutMs,
      log,
      ...(lease ? { ownerOf: (h: string) => lease.ownerOf(h), liveConductors: () => lease.liveConductors() } : {}),
      ...(hostRouter ? { settled: (h: string) => hostRouter.settled(h) } : {}),
      ...(home ? { arqHome: home } : {}),
      // A round trip with a deadline: a partitioned database hangs without an error.
      databaseProblem: databaseProbe(inner, READINESS_PROBE_MS) ?? (() => undefined),
      ...(lease ? { hostsProblem: () => takeoverProblem(journal as FencedJournal, lease, id) } : {}),
    }),
    serveService(bus, 'conductor', id, {
      info: () => ({
        leases: d.leases,
        subjectPrefix: d.subjectPrefix ?? null,
        database: config.databaseUrl && config.databaseUrl !== MEMORY_DATABASE ? 'postgresql' : 'memory',
      }),
      stats: (req) => {
        const out = stats(conductor, metrics, lease);
        if (req.resetWindow) metrics.lagWindow.reset();
        return out;
      },
    }),
  ];
  const health =
    d.metricsPort >= 0
      ? await startHealthServer({
          address: config.listen.address,
          port: d.metricsPort,
          metrics,
          log,
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
            return { ok: !nats && (lease?.valid() ?? true) && !database, conductorId: id, database: database ?? 'ok', nats: nats ?? 'ok' };
          },
        })
      : undefined;
  log.info({ leases: d.leases, hosts: conductor.hosts.size, metricsPort: health?.port }, 'conductor role up');
  let stopped: Promise<void> | undefined;
  return {
    id,
    conductor,
    bus,
    journal,
    lease,
    metrics,
    health,
    stop: () =>
      (stopped ??= (async () => {
        for (const o of offs) o();
        offAutoEnable?.();
        placement?.stop();
        await conductor.stop();
        await nova.stop();
        publisher?.stop();
        await lease?.stop();
        await leaseNc?.drain().catch(() => undefined);
        await health?.close();
        await bus.close();
        await journal.close();
      })()),
  };
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
