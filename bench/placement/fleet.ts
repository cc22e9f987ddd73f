import type { Logger } from 'pino';
import { Agent } from '../../actors/agent/index.js';
import { Conductor } from '../../actors/conductor/index.js';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { InProcessBus } from '../../bus/index.js';
import { DriverRegistry, FakeDriver } from '../../drivers/index.js';

/** Accelerators per simulated host, as bench:fleet makes them: Cyborg's fake FPGA and 9 fake GPUs. */
export const PER_HOST = 10;

/** A conductor and `hosts` simulated agents on an in-process bus, every inventory registered. */
export async function startFleet(hosts: number, tag: string, log: Logger): Promise<{ conductor: Conductor; stop(): Promise<void> }> {
  const bus = new InProcessBus(log);
  const timing = { driverOpTimeoutMs: 5_000, staleAfterMs: 3_600_000, lostAfterMs: 7_200_000, heartbeatIntervalMs: 3_600_000 };
  const conductor = new Conductor({ bus, journal: new MemoryJournal(), log, timing });
  await conductor.start();
  const agents: Agent[] = [];
  for (let h = 0; h < hosts; h++) {
    const host = `bench-${tag}-${String(h).padStart(5, '0')}`;
    const drivers = new DriverRegistry([new FakeDriver({ host, gpus: PER_HOST - 1, nics: 0 })]);
    const agent = new Agent({ host, bus, drivers, log, heartbeatIntervalMs: 3_600_000, discoveryIntervalMs: 3_600_000 });
    await agent.start();
    agents.push(agent);
  }
  return {
    conductor,
    stop: async () => {
      for (const a of agents) await a.stop();
      await conductor.stop();
    },
  };
}
