import { afterEach } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Agent, type AgentOptions } from '../../actors/agent/index.js';
import { Conductor, type ConductorOptions } from '../../actors/conductor/index.js';
import { MemoryJournal, type Journal } from '../../actors/runtime/index.js';
import { placementAllocations, PlacementSync } from '../../actors/services/index.js';
import { buildApi } from '../../api/server.js';
import { placementAuthFor } from '../keystone/placement-auth.js';
import type { V2Settings } from '../../api/v2/index.js';
import type { Bus } from '../../bus/bus.js';
import { InProcessBus } from '../../bus/in-process.js';
import { connectBus } from '../../bus/nats.js';
import type { Driver } from '../../drivers/driver.js';
import { FakeDriver, type FakeDriverOptions } from '../../drivers/fake/index.js';
import { DriverRegistry } from '../../drivers/registry.js';
import { PlacementClient } from '../../openstack/placement/client.js';
import { openTestJournal } from './database.js';
import { captureLogger, quietLogger, type LogLine } from './log.js';

/** Liveness slow enough that no host goes stale unless a test makes it; driver calls answer in time. */
export const fastTiming = { driverOpTimeoutMs: 5_000, staleAfterMs: 60_000, lostAfterMs: 120_000, heartbeatIntervalMs: 60_000 };

export type Timing = ConductorOptions['timing'];

export interface StackOptions {
  /** One agent per host; `compute-1` when left out. */
  hosts?: string[];
  /** The fake driver of each host (when `drivers` is left out). */
  fake?: Omit<FakeDriverOptions, 'host'>;
  /** The drivers of a host's agent, made anew each time the agent (re)starts; one fake driver when left out. */
  drivers?: (host: string) => Driver[];
  /** Settings of every agent beyond the stack's own (request timeout, telemetry, memory). */
  agent?: Partial<Omit<AgentOptions, 'host' | 'bus' | 'drivers' | 'log'>>;
  /** The in-process bus, or NATS under a subject prefix of the test's own. */
  bus?: 'in-process' | { natsUrl: string; prefix: string };
  /** In memory when left out; a journal of the test's own; or a migrated PostgreSQL journal on `databaseUrl`. */
  journal?: Journal | { databaseUrl: string; unavailableAfterMs?: number };
  /** With a PlacementSync against a real Placement. */
  placement?: { url: string; createRoots?: boolean; intervalMs?: number };
  /** With the HTTP API (Fastify, not listening: `app.inject`). */
  api?: boolean | { v2?: V2Settings };
  timing?: Partial<Timing>;
  /** The log of every part: kept in `lines` when left out, or the logger given (e.g. `quietLogger()`). */
  log?: Logger;
  acceleratorMachine?: ConductorOptions['acceleratorMachine'];
  restAfterMs?: number;
  /** The conductor's reconciliation pace (rounds, the orphan sweep's grace). */
  reconcile?: Pick<ConductorOptions, 'reconcileEveryMs' | 'orphanGraceMs'>;
}

export interface Stack {
  bus: Bus;
  journal: Journal;
  conductor: Conductor;
  /** One per host, in the order of `hosts`; `restartAgent` replaces an entry. */
  agents: Agent[];
  /** The fake drivers of the agents now running. */
  fakes: FakeDriver[];
  /** What the stack logged (empty when a logger was given). */
  lines: LogLine[];
  log: Logger;
  /** Present with `api`. */
  app: FastifyInstance;
  /** Present with `placement`. */
  sync: PlacementSync;
  placement: PlacementClient;
  /** A new agent process on the same host: fresh drivers, same bus. */
  restartAgent(index?: number): Promise<Agent>;
  /** A new conductor on the same bus and journal: it rebuilds its tree from the journal. */
  restartConductor(): Promise<Conductor>;
  stop(): Promise<void>;
}

/**
 * The pieces of a Cyborg deployment in this process, as a test story needs them: a conductor, one
 * agent per host with fake (or given) drivers, and on request NATS, PostgreSQL, Placement and the API.
 */
export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const captured = opts.log ? { log: opts.log, lines: [] } : captureLogger();
  const { log, lines } = captured;
  const timing = { ...fastTiming, ...opts.timing };
  const bus: Bus =
    !opts.bus || opts.bus === 'in-process'
      ? new InProcessBus(log)
      : await connectBus({ url: opts.bus.natsUrl, name: 'test-stack', log, prefix: opts.bus.prefix });
  const ownJournal = opts.journal !== undefined && !('commit' in opts.journal);
  const journal: Journal =
    opts.journal === undefined
      ? new MemoryJournal()
      : 'commit' in opts.journal
        ? opts.journal
        : await openTestJournal(opts.journal.databaseUrl, { unavailableAfterMs: opts.journal.unavailableAfterMs });
  // The Placement sync is started after the conductor (it reads it): the port reads it when asked.
  const placementPort = opts.placement
    ? {
        status: (id: string) => stack.sync?.status(id),
        allocations: (rp: string) => placementAllocations(stack.placement)(rp),
        releaseConsumer: (consumer: string, rp: string) => stack.placement.releaseProvider(consumer, rp),
        forgetHost: (host: string) => stack.sync?.deleteCreatedRoot(host) ?? Promise.resolve(false),
      }
    : undefined;
  const newConductor = (): Conductor =>
    new Conductor({
      bus,
      journal,
      log,
      timing,
      acceleratorMachine: opts.acceleratorMachine,
      restAfterMs: opts.restAfterMs,
      ...opts.reconcile,
      ...(placementPort ? { placement: placementPort } : {}),
    });
  const hosts = opts.hosts ?? ['compute-1'];
  const driversOf = opts.drivers ?? ((host: string) => [new FakeDriver({ host, ...opts.fake })]);

  const driversNow = new Map<string, Driver[]>();
  const startAgent = async (host: string): Promise<Agent> => {
    driversNow.set(host, driversOf(host));
    const agent = new Agent({
      host,
      bus,
      drivers: new DriverRegistry(driversNow.get(host)),
      log,
      heartbeatIntervalMs: timing.heartbeatIntervalMs,
      discoveryIntervalMs: 3_600_000,
      ...opts.agent,
    });
    await agent.start();
    return agent;
  };
  const fakesNow = (): FakeDriver[] => hosts.flatMap((h) => driversNow.get(h) ?? []).filter((d): d is FakeDriver => d instanceof FakeDriver);

  const stack = {
    bus,
    journal,
    lines,
    log,
    conductor: newConductor(),
    agents: [] as Agent[],
    fakes: [] as FakeDriver[],
    app: undefined as unknown as FastifyInstance,
    sync: undefined as unknown as PlacementSync,
    placement: undefined as unknown as PlacementClient,
    async restartAgent(index = 0): Promise<Agent> {
      await stack.agents[index]!.stop();
      stack.agents[index] = await startAgent(hosts[index]!);
      stack.fakes = fakesNow();
      return stack.agents[index];
    },
    async restartConductor(): Promise<Conductor> {
      await stack.conductor.stop();
      stack.conductor = newConductor();
      await stack.conductor.start();
      return stack.conductor;
    },
    async stop(): Promise<void> {
      await stack.app?.close();
      stack.sync?.stop();
      for (const a of stack.agents) await a.stop();
      await stack.conductor.stop();
      await bus.close();
      if (ownJournal) await journal.close();
    },
  };
  await stack.conductor.start();
  for (const host of hosts) stack.agents.push(await startAgent(host));
  stack.fakes = fakesNow();
  if (opts.placement) {
    stack.placement = placementClient(opts.placement.url);
    stack.sync = new PlacementSync({
      source: stack.conductor,
      client: stack.placement,
      log: process.env.PLACEMENT_TEST_LOG ? log.child({}, { level: process.env.PLACEMENT_TEST_LOG }) : quietLogger(),
      resourceProviderName: '{host}',
      createRootProviders: opts.placement.createRoots ?? false,
      intervalMs: opts.placement.intervalMs ?? 60_000,
      concurrency: 4,
    });
    stack.sync.start();
  }
  if (opts.api) {
    stack.app = await buildApi({ control: stack.conductor, log, v2: opts.api === true ? undefined : opts.api.v2 });
    await stack.app.ready();
  }
  return stack;
}

/** A Placement client as the test Placement wants it: noauth2's admin token, or Keystone tokens (.ci/run). */
export function placementClient(url: string): PlacementClient {
  return new PlacementClient({ url, timeoutMs: 5_000, ...placementAuthFor(url) });
}

/** A story's stacks, stopped after each of its tests (see `useStack`). */
export interface StoryStacks {
  /** Starts the test's stack. */
  start(opts?: StackOptions): Promise<Stack>;
  /** A second conductor on the stack's bus and `journal`, started: what a restart after a crash builds. */
  restartOn(journal: Journal): Promise<Conductor>;
}

/**
 * For a story file: every test's stack and the conductor that rebuilds it are stopped after the
 * test (the second first), whatever the test left running.
 */
export function useStack(): StoryStacks {
  let rt: Stack | undefined;
  let again: Conductor | undefined;
  afterEach(async () => {
    await again?.stop();
    await rt?.stop();
    rt = undefined;
    again = undefined;
  });
  return {
    async start(opts = {}) {
      rt = await startStack(opts);
      return rt;
    },
    async restartOn(journal) {
      if (!rt) throw new Error('restartOn: no stack started in this test');
      again = new Conductor({ bus: rt.bus, journal, log: captureLogger().log, timing: fastTiming });
      await again.start();
      return again;
    },
  };
}
