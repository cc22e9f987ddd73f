import type { Logger } from 'pino';
import { MemoryJournal, type Journal } from '../actors/runtime/index.js';
import { connectBus, type NatsBus } from '../bus/index.js';
import { Subjects } from '../bus/index.js';
import { ConfigError, StartupError, StartupExit, type Config } from '../config/index.js';
import { openJournal } from '../db/index.js';
import type { HealthServer, Metrics } from '../metrics/index.js';
import { ProtocolLevel } from '../release/index.js';
import { NatsWatch, natsUrlForLog } from './nats-watch.js';

/** The bus of a distributed role: NATS at `natsUrl` (required), with the configured subject prefix. */
export async function roleBus(config: Config, log: Logger, name: string, metrics: Metrics, onReconnect?: () => void): Promise<NatsBus> {
  if (!config.natsUrl) throw new ConfigError('this role talks to the others over NATS: set NATS_URL (e.g. nats://127.0.0.1:4222)');
  // The connection waits for a server that is not up yet: said in the log while it does.
  const watch = new NatsWatch(config.natsUrl, log);
  const bus = await connectBus({
    url: config.natsUrl,
    name,
    log,
    auth: config.nats,
    // An agent's replies come under its own host's inbox: its credentials may subscribe nowhere else.
    ...(name.startsWith('cyborg-agent-') ? { inboxPrefix: Subjects.agentInbox(config.host) } : {}),
    // The api's too: its credentials may not listen on other roles' replies (deploy/nats/).
    ...(name.startsWith('cyborg-api-') ? { inboxPrefix: Subjects.apiInbox } : {}),
    ...(config.distributed.subjectPrefix ? { prefix: config.distributed.subjectPrefix } : {}),
    onError: (reason) => metrics.busErrors.inc({ reason }),
    ...(onReconnect ? { onReconnect } : {}),
    identity: { role: name.split('-')[1] ?? 'unknown', host: config.host },
    protocol: new ProtocolLevel({
      peerWindowMs: config.distributed.protocolPeerWindowMs,
      ...(config.distributed.protocolPin !== undefined ? { pin: config.distributed.protocolPin } : {}),
    }),
  }).catch((err: unknown) => {
    watch.stop();
    throw err;
  });
  watch.connected(bus.nc);
  watches.set(bus, watch);
  return bus;
}

const watches = new WeakMap<NatsBus, NatsWatch>();

/** The readiness text of a role's bus while NATS is down (a `/readyz` check). */
export function natsProblem(bus: NatsBus): string | undefined {
  return bus.nc.isClosed() ? 'NATS connection closed' : watches.get(bus)?.problem();
}

/** Stops saying that NATS is down (the role is stopping). */
export function stopNatsWatch(bus: NatsBus): void {
  watches.get(bus)?.stop();
}

/** Throws before anything starts when a conductor has no `[database] connection`. */
export function requireDatabase(config: Config): void {
  if (config.databaseUrl) return;
  throw new StartupError(
    'a conductor needs a database: set [database] connection (DATABASE_URL, --database) to postgresql://…; memory:// keeps its state in memory only, for a demo',
    StartupExit.config,
  );
}

/** `[database] connection = memory://`: the in-memory journal, asked for by name. */
export const MEMORY_DATABASE = 'memory://';

/**
 * The conductor's journal: PostgreSQL at DATABASE_URL. A conductor without one refuses to start:
 * with its state in memory it would join the fleet, take hosts over and forget them at its next
 * restart (a misspelt `[database]` option did that). Memory only when named (`memory://`), for a
 * demo or a test, and said loudly.
 */
export async function roleJournal(config: Config, log: Logger): Promise<Journal> {
  requireDatabase(config);
  if (config.databaseUrl !== MEMORY_DATABASE) return openJournal(config, log.child({ component: 'persistence' }));
  log.warn(
    'DATABASE_URL=memory://: this conductor keeps its state IN MEMORY ONLY. A restart loses it and no other conductor can take its hosts over. Set DATABASE_URL=postgres://… for anything but a demo.',
  );
  return new MemoryJournal();
}

/**
 * A role's start-up steps, each named on its health listener while it runs (`/readyz`: 503,
 * `waiting for <what>`); a step that fails closes the listener. The listener is up before the
 * first step: a role waiting for NATS answered nothing at all before (issue 42).
 */
export function startingSteps(health: HealthServer | undefined): <T>(what: string, step: () => Promise<T>) => Promise<T> {
  return async (what, step) => {
    health?.waitingFor(what);
    try {
      return await step();
    } catch (err) {
      await health?.close();
      throw err;
    }
  };
}

/** What a role waits for while it connects to NATS, as `/readyz` names it. */
export function natsWaitText(config: Config): string {
  return `NATS at ${natsUrlForLog(config.natsUrl ?? '')} ([DEFAULT] transport_url)`;
}
