import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { RemoteControlPlane } from '../control/index.js';
import { buildApi } from '../api/server.js';
import type { NatsBus } from '../bus/index.js';
import type { Config } from '../config/index.js';
import { metricsRoute, Metrics } from '../metrics/index.js';
import { natsProblem, natsWaitText, roleBus, stopNatsWatch } from './shared.js';
import { releaseInfo } from './release-info.js';
import { startUiListener } from './ui-listener.js';
import { listenEarly } from './early-listener.js';
import { apiAuthFromConfig } from '../api/auth/index.js';

export interface RunningApi {
  url: string;
  /** Where browsers open the visualizer (`[api] ui_port`), when that is another listener. */
  uiUrl: string | undefined;
  app: FastifyInstance;
  control: RemoteControlPlane;
  bus: NatsBus;
  metrics: Metrics;
  stop(): Promise<void>;
}

/**
 * `cyborg api`: the HTTP API apart from the conductors. It reads a read model of committed
 * views fed by the conductors over NATS, sends writes to them, and serves `/healthz`, `/readyz`
 * and `/metrics` beside the API. Stateless: run as many as you like behind a balancer.
 */
export async function startApiRole(config: Config, log: Logger): Promise<RunningApi> {
  log = log.child({ role: 'api' });
  const metrics = new Metrics('api');
  // Bound first: `/healthz` and `/readyz` (503, naming what it waits for) answer while NATS is away,
  // and a port in use is said at once.
  const early = await listenEarly(config.listen.address, config.listen.port);
  early.waitingFor(natsWaitText(config));
  const bus = await roleBus(config, log, `cyborg-api-${config.host}`, metrics).catch(async (err: unknown) => {
    await early.close();
    throw err;
  });
  early.waitingFor('the API to be built');
  const control = new RemoteControlPlane(bus, log, config.distributed.requestTimeoutMs, { viewCheckMs: config.distributed.viewCheckMs });
  // Listens at once: `/readyz` answers 503 until the view is complete (the conductors may start
  // after this process), and the view keeps itself current from then on (ViewSync).
  void control.start();
  const auth = apiAuthFromConfig(config, log);
  const app = await buildApi({
    control,
    log,
    v2: config.v2,
    auth,
    limits: config.api,
    health: {
      checks: { nats: () => natsProblem(bus), view: () => control.notReady(), conductor: () => control.conductorProblem() },
      about: () => releaseInfo(bus),
    },
    // Retiring a host is done by the conductor that holds its lease (control call `hosts.retire`).
    hostRetirer: { retire: (name, m) => control.retireHost(name, m) },
    serverFactory: early.serverFactory,
  });
  app.addHook('onClose', async () => auth.close());
  metricsRoute(app, metrics);
  await app.ready();
  early.open();
  const port = early.port;
  const url = `http://${config.listen.address.includes(':') ? `[${config.listen.address}]` : config.listen.address}:${port}`;
  log.info({ url }, 'api role up');
  // A second listener for browsers, unless the API's own port is one they open.
  const uiPort = config.listen.uiPort;
  const ui =
    uiPort >= 0 && uiPort !== port
      ? await startUiListener(app, config.listen.address, uiPort, log).catch(async (err: unknown) => {
          await app.close();
          await early.close();
          await bus.close();
          throw err;
        })
      : undefined;
  let stopped: Promise<void> | undefined;
  return {
    url,
    uiUrl: ui?.url,
    app,
    control,
    bus,
    metrics,
    stop: () =>
      (stopped ??= (async () => {
        await ui?.close();
        await app.close();
        await early.close();
        control.stop();
        stopNatsWatch(bus);
        await bus.close();
      })()),
  };
}
