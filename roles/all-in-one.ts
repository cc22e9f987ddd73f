import type { FastifyInstance } from 'fastify';
import { glanceFromConfig } from '../openstack/glance/index.js';
import type { Logger } from 'pino';
import { Agent } from '../actors/agent/index.js';
import { Conductor } from '../actors/conductor/index.js';
import type { RequestMeta } from '../model/index.js';
import { placementFromConfig } from './placement.js';
import { metricsProjectNames } from './project-names.js';
import type { Journal } from '../actors/runtime/index.js';
import { buildApi } from '../api/server.js';
import { fakeFaultInjector } from './fake-faults.js';
import { databaseChecks, openJournal } from '../db/index.js';
import { InProcessBus } from '../bus/index.js';
import type { Config } from '../config/index.js';
import { FakeDriver, DriverRegistry, type Driver } from '../drivers/index.js';
import { metricsRoute, Metrics, watchFlushes } from '../metrics/index.js';
import { startNovaNotifier } from '../openstack/nova.js';
import { startAutoEnable } from './auto-enable.js';
import { enabledDrivers, hotplugFor } from './drivers.js';
import { apiAuthFromConfig } from '../api/auth/index.js';
import { listenEarly } from './early-listener.js';
import { releaseInfo } from './release-info.js';

export interface Running {
  url: string;
  app: FastifyInstance;
  conductor: Conductor;
  agent: Agent;
  bus: InProcessBus;
  journal: Journal;
  /** Stops in order: stop taking work, drain the bus, flush persistence, close it. */
  stop(): Promise<void>;
}

export interface AllInOneDeps {
  /** Defaults to the database of the config (DATABASE_URL, else embedded PGlite under dataDir). */
  journal?: Journal;
  /** The fake driver to use (a test scripts it); default: one when `fake_driver` is enabled. */
  fake?: FakeDriver;
  /** Drivers beside the fake one; default: the others enabled in the config (generic_driver). */
  drivers?: Driver[];
}

/** API + conductor + one agent (the fake driver by default), in one process, over the in-process bus. */
export async function startAllInOne(config: Config, log: Logger, deps: AllInOneDeps = {}): Promise<Running> {
  // Bound first: a port in use is said at once (it waited for the database, 34 s, before), and
  // `/readyz` is 503 naming what the process waits for while it starts.
  const early = await listenEarly(config.listen.address, config.listen.port);
  const bus = new InProcessBus(log.child({ component: 'bus' }));
  // Without an injected journal: PostgreSQL at DATABASE_URL, or the embedded one under dataDir
  // (migrations applied either way). Tests of the runtime alone inject a MemoryJournal.
  early.waitingFor(config.databaseUrl ? 'the database ([database] connection)' : `the embedded database under ${config.dataDir}`);
  const journal =
    deps.journal ??
    (await openJournal(config, log.child({ component: 'persistence' })).catch(async (err: unknown) => {
      await early.close();
      throw err;
    }));
  early.waitingFor('the conductor to load its state');
  // Nova-less by default here: the host's root provider is created when Placement lacks it.
  const link = placementFromConfig(config, log.child({ component: 'placement' }), true);
  const conductor = new Conductor({
    bus,
    journal,
    log: log.child({ component: 'conductor' }),
    timing: config.timing,
    usageWindow: config.conductor.usageWindow,
    ...(link.port ? { placement: link.port } : {}),
  });
  await conductor.start();
  const placement = link.start(conductor);
  const nova = startNovaNotifier(config, conductor, log.child({ component: 'nova' }));
  const configured = enabledDrivers(config, log.child({ component: 'agent' }));
  const fake = deps.fake ?? configured.find((d) => d instanceof FakeDriver);
  const others = deps.drivers ?? configured.filter((d) => !(d instanceof FakeDriver));
  const autoEnable = config.agent.autoEnable ? startAutoEnable(conductor, log.child({ component: 'auto-enable' })) : undefined;
  const drivers = [...(fake ? [fake] : []), ...others];
  const images = glanceFromConfig(config);
  const agent = new Agent({
    host: config.host,
    bus,
    ...(images ? { images } : {}),
    drivers: new DriverRegistry(drivers),
    log: log.child({ component: 'agent' }),
    heartbeatIntervalMs: config.timing.heartbeatIntervalMs,
    discoveryIntervalMs: config.timing.discoveryIntervalMs,
    healthIntervalMs: config.timing.healthIntervalMs,
    telemetryIntervalMs: config.timing.telemetryIntervalMs,
    hotplug: hotplugFor(config, drivers),
    ...(config.agent.libvirtStateDir ? { guestsDir: config.agent.libvirtStateDir } : {}),
  });
  await agent.start();
  const auth = apiAuthFromConfig(config, log);
  const app = await buildApi({
    control: conductor,
    log,
    v2: config.v2,
    auth,
    limits: config.api,
    health: { checks: databaseChecks(journal), about: () => releaseInfo() },
    // Retiring a host needs the conductor and the journal in this process (the api role has neither).
    ...(journal.forgetHost ? { hostRetirer: { retire: (name: string, m: RequestMeta) => conductor.retireHost(name, m) } } : {}),
    // Fault injection exists only where a fake driver runs here (demos, rehearsals: docs/metrics.md).
    ...(fake ? { faultInjector: fakeFaultInjector(fake, agent, config.host) } : {}),
    serverFactory: early.serverFactory,
  });
  app.addHook('onClose', async () => auth.close());
  const metrics = new Metrics('all-in-one');
  const projectName = metricsProjectNames(config, app.names);
  const unwatch = metrics.watchConductor(conductor, { consumerLabels: config.conductor.metricsConsumerLabels, ...(projectName ? { projectName } : {}) });
  watchFlushes(metrics, journal);
  metricsRoute(app, metrics);
  await app.ready();
  early.open();
  const port = early.port;
  const host = config.listen.address === '0.0.0.0' || config.listen.address === '::' ? '127.0.0.1' : config.listen.address;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let stopped: Promise<void> | undefined;
  return {
    url,
    app,
    conductor,
    agent,
    bus,
    journal,
    stop: () =>
      (stopped ??= (async () => {
        await app.close();
        await early.close();
        unwatch();
        autoEnable?.();
        await agent.stop();
        placement?.stop();
        await nova.stop();
        await conductor.stop();
        await bus.close();
        await journal.close();
      })()),
  };
}
