import { join, resolve } from 'node:path';
import { glanceFromConfig } from '../openstack/glance/index.js';
import type { Logger } from 'pino';
import { Agent } from '../actors/agent/index.js';
import { AgentCache } from '../actors/agent/index.js';
import type { NatsBus } from '../bus/index.js';
import { makeDirectory, optionSource, unusableDirectory, type Config } from '../config/index.js';
import { DriverRegistry } from '../drivers/index.js';
import { startHealthServer, type HealthServer, Metrics } from '../metrics/index.js';
import { enabledDrivers, hotplugFor, restoreHostState, type RestoreStep } from './drivers.js';
import { serveService } from './service.js';
import { releaseInfo } from './release-info.js';
import { natsProblem, natsWaitText, roleBus, startingSteps } from './shared.js';

export interface RunningAgent {
  agent: Agent;
  cache: AgentCache;
  bus: NatsBus;
  metrics: Metrics;
  health: HealthServer | undefined;
  /** What was made again on the host after this start (bound handles, MIG layouts, VF counts); a failed step is here, not a crash. */
  restored: RestoreStep[];
  /** Resolves once the agent has registered and reported its inventory (retried until it has). */
  ready: Promise<void>;
  stop(): Promise<void>;
}

/**
 * `cyborg agent`: the agent of one compute host, over NATS. It resumes from its local cache
 * (epoch + 1, last inventory, results of earlier commands), then registers and reports its
 * inventory — retrying until a conductor answers — and resyncs after every NATS reconnect.
 */
export async function startAgentRole(config: Config, log: Logger, deps: { drivers?: DriverRegistry } = {}): Promise<RunningAgent> {
  const host = config.host;
  // The agent and its cache bind the host on their own lines (a logger with it already would repeat
  // the key); the role's other lines (NATS, drivers, health) get it here.
  const hostless = log.child({ role: 'agent' });
  log = hostless.child({ host });
  const metrics = new Metrics('agent');
  // Listening before it waits for anything: `/readyz` names what it waits for (NATS).
  const health =
    config.distributed.metricsPort >= 0
      ? await startHealthServer({ address: config.listen.address, port: config.distributed.metricsPort, metrics, log })
      : undefined;
  const step = startingSteps(health);
  const drivers = deps.drivers ?? new DriverRegistry(enabledDrivers(config, log));
  const cache = await step('its local cache ([DEFAULT] state_path)', () =>
    // Made here first: under /proc a recursive mkdir (the cache's own) never settles.
    makeDirectory(join(config.dataDir, 'agent'))
      .then(() =>
        AgentCache.open(
          join(config.dataDir, 'agent'),
          host,
          drivers.list().map((d) => ({ name: d.name, version: d.version })),
          hostless,
        ),
      )
      .catch((err: unknown) => {
        throw unusableDirectory(err, optionSource(config, 'dataDir'), resolve(config.dataDir));
      }),
  );
  // Before the first discovery: what the drivers make again (mdevs, MIG instances, VFs) is then reported as it is.
  const restored = await step('the host state its drivers make again', () => restoreHostState(drivers.list(), cache.boundHandles(), log));
  let agent: Agent | undefined;
  let started = false;
  let resyncing = false;
  let stopping = false;
  const bus = await step(natsWaitText(config), () =>
    roleBus(config, log, `cyborg-agent-${host}`, metrics, () => {
      if (started && !resyncing) {
        resyncing = true;
        void resync(agent!, log, () => stopping).finally(() => (resyncing = false));
      }
    }),
  );
  const images = glanceFromConfig(config);
  agent = new Agent({
    host,
    bus,
    drivers,
    log: hostless,
    ...(images ? { images } : {}),
    heartbeatIntervalMs: config.timing.heartbeatIntervalMs,
    discoveryIntervalMs: config.timing.discoveryIntervalMs,
    healthIntervalMs: config.timing.healthIntervalMs,
    requestTimeoutMs: config.distributed.requestTimeoutMs,
    telemetryIntervalMs: config.timing.telemetryIntervalMs,
    epoch: cache.epoch,
    memory: cache,
    hotplug: hotplugFor(config, drivers.list()),
    ...(config.agent.libvirtStateDir ? { guestsDir: config.agent.libvirtStateDir } : {}),
  });
  const a = agent;
  const ready = (async () => {
    for (let attempt = 0, delay = 250; !stopping; attempt++, delay = Math.min(delay * 2, 5_000)) {
      try {
        await a.start();
        started = true;
        log.info({ epoch: cache.epoch, agentId: a.agentId, attempts: attempt + 1 }, 'agent registered and reported its inventory');
        return;
      } catch (err) {
        await a.stop();
        log.warn({ err: (err as Error).message, attempt: attempt + 1, retryInMs: delay }, 'no conductor answered the registration; retrying');
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  })();
  const off = serveService(bus, 'agent', host, {
    info: () => ({
      host,
      agentId: a.agentId,
      epoch: cache.epoch,
      drivers: drivers.list().map((d) => ({ name: d.name, version: d.version })),
      restored,
      ...releaseInfo(bus),
    }),
    stats: () => ({ devices: cache.devices.length, registered: started }),
  });
  health?.serve({
    healthy: () => ({ ok: !bus.nc.isClosed(), registered: started, host, epoch: cache.epoch }),
    ready: () => {
      const nats = natsProblem(bus);
      return { ok: !nats, registered: started, host, epoch: cache.epoch, nats: nats ?? 'ok', ...releaseInfo(bus) };
    },
  });
  let stopped: Promise<void> | undefined;
  return {
    agent: a,
    cache,
    bus,
    metrics,
    health,
    ready,
    restored,
    stop: () =>
      (stopped ??= (async () => {
        stopping = true;
        off();
        await a.stop();
        await cache.save();
        await health?.close();
        await bus.close();
      })()),
  };
}

/**
 * After a reconnect: say who we are again and send the full inventory (the conductor reconciles).
 * The conductors may come back after us, so it retries with backoff until one answers.
 */
async function resync(agent: Agent, log: Logger, stopped: () => boolean): Promise<void> {
  for (let attempt = 1, delay = 250; !stopped(); attempt++, delay = Math.min(delay * 2, 5_000)) {
    try {
      await agent.register();
      await agent.discoverAndReport();
      log.info({ attempts: attempt }, 'resynced with the conductor after a reconnect');
      return;
    } catch (err) {
      log.warn({ err: (err as Error).message, attempt, retryInMs: delay }, 'resync after reconnect failed; retrying');
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
