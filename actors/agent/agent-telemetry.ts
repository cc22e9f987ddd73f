// The agent's usage telemetry: every driver's samples, published in bounded messages, a round at a time.
import type { Logger } from 'pino';
import { Subjects, TelemetryMessage, USAGE_PER_MESSAGE, type Bus } from '../../bus/index.js';
import { canReportUsage, type DriverRegistry } from '../../drivers/index.js';

export class AgentTelemetry {
  /** A round under way, and the drivers whose usage() failed last time (said once). */
  private running = false;
  private readonly failing = new Set<string>();

  constructor(
    private readonly drivers: DriverRegistry,
    private readonly line: { bus: Bus; host: string; log: Logger; stopped: () => boolean },
  ) {}

  /** One telemetry round: every driver's usage, published (the interval's tick; stories call it too). */
  async round(): Promise<void> {
    // A driver slower than the interval: the round in flight is not joined by another one.
    if (this.running) return;
    this.running = true;
    const { bus, host, log } = this.line;
    try {
      const usage = [];
      for (const d of this.drivers.list()) {
        if (!canReportUsage(d)) continue;
        try {
          usage.push(...(await d.usage()));
          this.failing.delete(d.name);
        } catch (err) {
          // One driver's failure costs only its own samples; said once until it recovers.
          if (!this.failing.has(d.name)) log.warn({ err, driver: d.name }, 'a driver could not report usage; its devices have no samples until it can');
          this.failing.add(d.name);
        }
      }
      const at = Date.now();
      // A host with thousands of deployables (VFs, vGPUs) sends them in several messages.
      for (let i = 0; i < usage.length && !this.line.stopped(); i += USAGE_PER_MESSAGE) {
        bus.publish(Subjects.telemetry(host), TelemetryMessage, { host, at, usage: usage.slice(i, i + USAGE_PER_MESSAGE) });
      }
    } finally {
      this.running = false;
    }
  }
}
