// The agent's health reports: polled from the drivers that can tell, pushed by those that learn of
// faults as they happen (XID events); one message per host either way.
import type { Logger } from 'pino';
import { HealthMessage, Subjects, type Bus, type HealthMsg } from '../../bus/index.js';
import { canReportHealth, canWatchHealth, type Health, type HealthWatch } from '../../drivers/index.js';
import type { AgentDrivers } from './agent-drivers.js';

/** Where and as whom an agent's health is reported. */
export interface HealthLine {
  bus: Bus;
  host: string;
  agentId: string;
  /** The agent's, `host` bound. */
  log: Logger;
  /** Whether the agent stopped: a watch may still push after that, and is not heard. */
  stopped: () => boolean;
}

export class AgentHealth {
  /** The drivers' pushed health, watched from the first discovery on. */
  private watches: HealthWatch[] = [];

  constructor(
    private readonly drivers: AgentDrivers,
    private readonly line: HealthLine,
  ) {}

  /**
   * Asks every active driver that can tell for its devices' health and sends one message for the
   * host. A driver whose check fails says nothing this time: a missing answer is no verdict on
   * its devices (a hung driver shows in its operations, not as a quarantine of every device).
   */
  async check(): Promise<HealthMsg['checks']> {
    const found: Health[] = [];
    for (const d of this.drivers.active()) {
      if (!canReportHealth(d)) continue;
      try {
        found.push(...(await d.health()));
      } catch (err) {
        this.line.log.warn({ err, driver: d.name }, 'health check failed; its devices are left out of this report');
      }
    }
    return this.send(found);
  }

  /** Pushed faults are sent at once, not at the next poll. */
  watch(): void {
    for (const d of this.drivers.active()) {
      if (!canWatchHealth(d)) continue;
      const watch = d.watchHealth((signals) => void this.send(signals), this.line.log);
      if (watch) this.watches.push(watch);
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.watches.splice(0).map((w) => w.stop()));
  }

  /** One health message for the host (none when there is nothing to say). */
  private send(found: readonly Health[]): HealthMsg['checks'] {
    const checks: HealthMsg['checks'] = found.map((h) => ({
      deployableUuid: h.deployableUuid,
      healthy: h.healthy,
      ...(h.healthy ? {} : { severity: h.severity ?? 'transient', reason: h.reason ?? 'unhealthy' }),
    }));
    const { bus, host, agentId } = this.line;
    if (checks.length > 0 && !this.line.stopped()) {
      bus.publish(Subjects.report('health', host), HealthMessage, { host, agentId, at: Date.now(), checks });
    }
    return checks;
  }
}
