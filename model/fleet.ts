import type { CommittedHost } from './control-plane.js';
import type { EventFeed } from './events.js';
import type { UsageSample } from './usage.js';

/** What became of the usage samples a conductor received (`cyborg_usage_samples_total{outcome}`). */
export interface UsageStats {
  /** Kept in a window (clamped ones included). */
  recorded: number;
  /** Kept, with at least one value brought within its bounds (or dated on receipt: the agent's clock was off). */
  clamped: number;
  /** For an accelerator the conductor does not hold, or holds as removed. */
  unknownDevice: number;
  /** Unusable: utilisation not a finite number, or measured before the device's latest sample. */
  invalid: number;
}

/** A conductor's recent usage as its readers take it: the latest sample per accelerator and the window's totals. */
export interface UsageReadings {
  latest(acceleratorId: string): UsageSample | undefined;
  readonly stats: Readonly<UsageStats>;
  /** Memory the windows take. */
  readonly bytes: number;
}

/** One host as the fleet series see it: its committed view, and since when it has been drained. */
export interface FleetHost extends CommittedHost {
  /** When the host's drain began (ms since the epoch); undefined while it is not drained. */
  drainedSince(): number | undefined;
}

/**
 * What the fleet metrics (metrics/) read of a conductor at scrape time: its hosts and their
 * accelerators' committed views, its committed transitions, its usage windows. The conductor
 * implements it; metrics/ never sees the conductor's class.
 */
export interface FleetSource {
  readonly hub: EventFeed;
  readonly hosts: ReadonlyMap<string, FleetHost>;
  readonly usage: UsageReadings;
  /** How long the conductor waits for a driver operation (`install`, `program`, …) before it fails it. */
  opDeadlineMs(op: string): number;
}
