import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { Agent } from '../../actors/agent.js';
import { Conductor, type ConductorOptions } from '../../actors/conductor.js';
import { MemoryJournal, type Journal } from '../../actors/journal.js';
import { InProcessBus } from '../../bus/in-process.js';
import { FakeDriver, type FakeDriverOptions } from '../../drivers/fake/index.js';
import { DriverRegistry } from '../../drivers/registry.js';

/** A logger that keeps every line, so a test can assert what an operator would read. */
export function captureLogger(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines };
}

export interface Runtime {
  bus: InProcessBus;
  journal: Journal;
  conductor: Conductor;
  agents: Agent[];
  fakes: FakeDriver[];
  lines: Record<string, unknown>[];
  stop(): Promise<void>;
}

export const fastTiming = { driverOpTimeoutMs: 5_000, staleAfterMs: 60_000, lostAfterMs: 120_000, heartbeatIntervalMs: 60_000 };

/** Conductor + one agent per host (fake driver), over the in-process bus, in memory. */
export async function startRuntime(opts: {
  hosts?: string[];
  fake?: Omit<FakeDriverOptions, 'host'>;
  journal?: Journal;
  timing?: Partial<typeof fastTiming>;
  acceleratorMachine?: ConductorOptions['acceleratorMachine'];
  restAfterMs?: number;
} = {}): Promise<Runtime> {
  const { log, lines } = captureLogger();
  const bus = new InProcessBus(log);
  const journal = opts.journal ?? new MemoryJournal();
  const timing = { ...fastTiming, ...opts.timing };
  const conductor = new Conductor({ bus, journal, log, timing, acceleratorMachine: opts.acceleratorMachine, restAfterMs: opts.restAfterMs });
  await conductor.start();
  const fakes: FakeDriver[] = [];
  const agents: Agent[] = [];
  for (const host of opts.hosts ?? ['compute-1']) {
    const fake = new FakeDriver({ host, ...opts.fake });
    const agent = new Agent({ host, bus, drivers: new DriverRegistry([fake]), log, heartbeatIntervalMs: timing.heartbeatIntervalMs, discoveryIntervalMs: 3_600_000 });
    await agent.start();
    fakes.push(fake);
    agents.push(agent);
  }
  return {
    bus, journal, conductor, agents, fakes, lines,
    async stop() {
      for (const a of agents) await a.stop();
      await conductor.stop();
      await bus.close();
    },
  };
}
