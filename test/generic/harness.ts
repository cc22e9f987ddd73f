import type { Agent } from '../../actors/agent/index.js';
import { FakeDriver } from '../../drivers/fake/index.js';
import { GenericDriver, SimulatedOps } from '../../drivers/generic/index.js';
import { GPU_TREE } from '../support/fixtures.js';
import { startStack } from '../support/stack.js';

/**
 * One compute host with the generic driver (over the GPU fixture tree, host operations simulated)
 * beside the fake driver; the agent and the conductor can each be restarted on the same bus and journal.
 */
export async function startGenericHost(host = 'gpu-host-1') {
  const drivers = { generic: undefined as unknown as GenericDriver, ops: new SimulatedOps() };
  // Each agent process starts fresh drivers, at the version they ship.
  const stack = await startStack({
    hosts: [host],
    drivers: () => {
      drivers.ops = new SimulatedOps();
      drivers.generic = new GenericDriver({ host, sysfsRoot: GPU_TREE, ops: drivers.ops, version: '1.0.0' });
      return [drivers.generic, new FakeDriver({ host })];
    },
  });
  // Getters, not copies: after a restart they show the agent and drivers now running.
  return Object.defineProperties(stack as typeof stack & { host: string; agent: Agent; generic: GenericDriver; ops: SimulatedOps }, {
    host: { value: host },
    agent: { get: () => stack.agents[0]! },
    generic: { get: () => drivers.generic },
    ops: { get: () => drivers.ops },
  });
}
