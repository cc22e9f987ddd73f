import type { Agent } from '../actors/agent/index.js';
import type { FaultInjector } from '../api/routes/fake-faults.js';
import type { FakeDriver } from '../drivers/index.js';

/**
 * The all-in-one's fault injector: the fault goes to its own fake driver, and the agent checks
 * health at once, so a demo need not wait for `[agent] health_interval_ms`.
 */
export function fakeFaultInjector(fake: FakeDriver, agent: Agent, host: string): FaultInjector {
  return {
    driver: fake.name,
    async inject(deviceHost, deployableUuid, fault, reason) {
      // One process, one host: a device of another host would be another agent's fake driver.
      if (deviceHost !== host) return;
      if (fault === 'clear') fake.recover(deployableUuid);
      else fake.injectHealthFault(deployableUuid, fault, reason);
      await agent.checkHealth();
    },
  };
}
