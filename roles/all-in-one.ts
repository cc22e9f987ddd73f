import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Agent } from '../actors/agent.js';
import { Conductor } from '../actors/conductor.js';
import { MemoryJournal, type Journal } from '../actors/journal.js';
import { buildApi } from '../api/server.js';
import { InProcessBus } from '../bus/in-process.js';
import type { Config } from '../config/index.js';
import { FakeDriver } from '../drivers/fake/index.js';
import { DriverRegistry } from '../drivers/registry.js';

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
  /** Defaults to the in-memory journal; the persistence layer passes the embedded database. */
  journal?: Journal;
  fake?: FakeDriver;
}

/** API + conductor + one agent with the fake driver, in one process, over the in-process bus. */
export async function startAllInOne(config: Config, log: Logger, deps: AllInOneDeps = {}): Promise<Running> {
  const bus = new InProcessBus(log.child({ component: 'bus' }));
  const journal = deps.journal ?? new MemoryJournal();
  const conductor = new Conductor({ bus, journal, log: log.child({ component: 'conductor' }), timing: config.timing });
  await conductor.start();
  const fake = deps.fake ?? new FakeDriver({ host: config.host, ...config.fake });
  const agent = new Agent({
    host: config.host,
    bus,
    drivers: new DriverRegistry([fake]),
    log: log.child({ component: 'agent' }),
    heartbeatIntervalMs: config.timing.heartbeatIntervalMs,
    discoveryIntervalMs: config.timing.discoveryIntervalMs,
    telemetryIntervalMs: 5_000,
  });
  await agent.start();
  const app = await buildApi({ control: conductor, log });
  await app.listen({ host: config.listen.address, port: config.listen.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.listen.port;
  const host = config.listen.address === '0.0.0.0' || config.listen.address === '::' ? '127.0.0.1' : config.listen.address;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let stopped: Promise<void> | undefined;
  return {
    url, app, conductor, agent, bus, journal,
    stop: () => (stopped ??= (async () => {
      await app.close();
      await agent.stop();
      await conductor.stop();
      await bus.close();
      await journal.close();
    })()),
  };
}
