/** The in-process stack the api benches measure: one conductor and fake hosts on one bus, with quiet clocks. */
import type { Logger } from 'pino';
import { Agent } from '../../actors/agent/index.js';
import { Conductor } from '../../actors/conductor/index.js';
import type { Journal } from '../../actors/runtime/index.js';
import type { Bus } from '../../bus/index.js';
import { DriverRegistry, FakeDriver } from '../../drivers/index.js';

/** A conductor whose liveness clocks never fire during a bench. */
export async function benchConductor(bus: Bus, journal: Journal, log: Logger): Promise<Conductor> {
  const timing = { driverOpTimeoutMs: 30_000, staleAfterMs: 3_600_000, lostAfterMs: 7_200_000, heartbeatIntervalMs: 3_600_000 };
  const conductor = new Conductor({ bus, journal, log, timing });
  await conductor.start();
  return conductor;
}

/** One fake host: 1 FPGA + 9 GPUs (10 devices), no periodic discovery, heartbeats or telemetry during the bench. */
export async function benchAgent(host: string, bus: Bus, log: Logger): Promise<Agent> {
  const agent = new Agent({
    host,
    bus,
    drivers: new DriverRegistry([new FakeDriver({ host, gpus: 9, nics: 0 })]),
    log,
    heartbeatIntervalMs: 3_600_000,
    discoveryIntervalMs: 3_600_000,
    telemetryIntervalMs: 0,
  });
  await agent.start();
  return agent;
}
