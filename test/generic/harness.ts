import { fileURLToPath } from 'node:url';
import { Agent } from '../../actors/agent.js';
import { Conductor } from '../../actors/conductor.js';
import { MemoryJournal } from '../../actors/journal.js';
import { InProcessBus } from '../../bus/in-process.js';
import { FakeDriver } from '../../drivers/fake/index.js';
import { GenericDriver, SimulatedOps } from '../../drivers/generic/index.js';
import { DriverRegistry } from '../../drivers/registry.js';
import { captureLogger, fastTiming } from '../support/runtime.js';

export const GPU_TREE = fileURLToPath(new URL('../fixtures/sysfs/gpu-host', import.meta.url));

/**
 * One compute host with the generic driver (over the GPU fixture tree, host operations simulated)
 * beside the fake driver; the agent and the conductor can each be restarted on the same bus and journal.
 */
export async function startGenericHost(host = 'gpu-host-1') {
  const { log, lines } = captureLogger();
  const bus = new InProcessBus(log);
  const journal = new MemoryJournal();
  const h = {
    bus, journal, lines, host,
    conductor: new Conductor({ bus, journal, log, timing: fastTiming }),
    agent: undefined as unknown as Agent,
    generic: undefined as unknown as GenericDriver,
    ops: new SimulatedOps(),
    /** A new agent process: fresh drivers (at the version they ship), same host. */
    async startAgent(): Promise<Agent> {
      h.ops = new SimulatedOps();
      h.generic = new GenericDriver({ host, sysfsRoot: GPU_TREE, ops: h.ops, version: '1.0.0' });
      h.agent = new Agent({ host, bus, drivers: new DriverRegistry([h.generic, new FakeDriver({ host })]), log, heartbeatIntervalMs: 60_000, discoveryIntervalMs: 3_600_000 });
      await h.agent.start();
      return h.agent;
    },
    async restartAgent(): Promise<Agent> {
      await h.agent.stop();
      return h.startAgent();
    },
    async restartConductor(): Promise<Conductor> {
      await h.conductor.stop();
      h.conductor = new Conductor({ bus, journal, log, timing: fastTiming });
      await h.conductor.start();
      return h.conductor;
    },
    async stop(): Promise<void> {
      await h.agent.stop();
      await h.conductor.stop();
      await bus.close();
    },
  };
  await h.conductor.start();
  await h.startAgent();
  return h;
}
