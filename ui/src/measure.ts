import type { StreamEvent } from './types.js';

/**
 * How long committed transitions take to reach the screen: for each event, the time from its
 * commit (stamped by the API when the hub announced it) to the end of the render that showed it.
 * Both clocks are the same machine's wall clock when the page runs beside the API (the
 * benchmark's case). Read from a test or `bench/ui.ts` as `window.cyborgLatency`.
 */
export class LatencyRecorder {
  private samples: number[] = [];
  private readonly max = 100_000;

  record(events: StreamEvent[], now: number): void {
    for (const e of events) this.samples.push(now - e.committedAt);
    if (this.samples.length > this.max) this.samples.splice(0, this.samples.length - this.max);
  }

  /** Milliseconds, in arrival order. */
  take(): number[] {
    return [...this.samples];
  }

  reset(): void {
    this.samples = [];
  }
}

export const latency = new LatencyRecorder();

declare global {
  interface Window {
    cyborgLatency: LatencyRecorder;
  }
}
window.cyborgLatency = latency;
