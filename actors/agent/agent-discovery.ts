// One discovery of the host, the snapshot the agent reports: what each driver found, what stands in
// for what it could not see, and the host side of the devices the conductor compares after a reboot.
import type { Logger } from 'pino';
import { MAX_OBSERVED_PER_HOST, type HostObservationMsg } from '../../bus/index.js';
import { canDiscoverPartially, canObserve, type Driver, type DriverRegistry } from '../../drivers/index.js';
import type { DeviceT } from '../../model/index.js';
import { merged, NOTHING_OBSERVED } from './agent-ops.js';
import { guestHolds, readGuests } from './guests.js';

/** A reason is the tool's own words, bounded like every text in a report (model/bounds.ts). */
const MAX_REASON = 2_000;

export interface DiscoveryScope {
  /** The agent's, its host bound. */
  log: Logger;
  /** Every loaded driver: a device names its driver, which may not be the one that discovered it. */
  registry: DriverRegistry;
  /** Which driver reported each deployable; updated here, read by the agent's commands. */
  discoveredBy: Map<string, string>;
  /** libvirt's live domain files, when the guests' holds are looked at. */
  guestsDir?: string;
}

/** What one discovery found, ready to report. */
export interface Discovered {
  devices: DeviceT[];
  /** The devices' host side; absent when no driver could tell, or too much to report whole. */
  observed?: HostObservationMsg;
  failed: { driver: string; reason: string }[];
}

/**
 * Runs each active driver's discovery. A device its driver cannot see now is not dropped: its last
 * observed record (from `previous`, the agent's inventory as it stands when asked) is kept, marked
 * not observed — a look that failed says nothing of whether the device is there.
 */
export async function discoverHost(drivers: readonly Driver[], previous: () => readonly DeviceT[], scope: DiscoveryScope): Promise<Discovered> {
  const { log, discoveredBy } = scope;
  const all: DeviceT[] = [];
  const failed: { driver: string; reason: string }[] = [];
  let observed: HostObservationMsg | undefined;
  const lastKnown = new Map(previous().map((dev) => [dev.uuid, dev]));
  for (const d of drivers) {
    try {
      const { devices: found, unobserved } = canDiscoverPartially(d) ? await d.discoverPartial() : { devices: await d.discover(), unobserved: [] };
      const kept = unobserved.flatMap((u) => {
        const last = lastKnown.get(u.deviceUuid) ?? u.partial;
        return last ? [{ ...last, unobserved: u.reason.slice(0, MAX_REASON) }] : [];
      });
      if (unobserved.length > 0) {
        log.warn(
          { driver: d.name, unobserved: unobserved.map((u) => ({ device: u.deviceUuid, reason: u.reason })) },
          'discovery could not observe some devices; their last observed records are kept, marked not observed',
        );
      }
      for (const dev of [...found, ...kept]) for (const dep of dev.deployables) discoveredBy.set(dep.uuid, d.name);
      all.push(...found, ...kept);
      if (canObserve(d))
        observed = merged(
          observed,
          await d.observe(found).catch((err: unknown) => {
            // Its devices are still reported; only the comparison of their host side waits.
            log.warn({ err, driver: d.name }, "the driver could not observe its devices' host side; left out of this report");
            return NOTHING_OBSERVED;
          }),
        );
    } catch (err) {
      // A failed discovery says nothing of the devices: they stay as last observed, marked with
      // the tool's own words, and are removed only by a discovery that succeeds without them.
      const reason = (err instanceof Error ? err.message : String(err)).slice(0, MAX_REASON);
      const kept = previous()
        .filter((dev) => reportedBy(dev, scope) === d.name)
        .map((dev) => ({ ...dev, unobserved: reason }));
      all.push(...kept);
      failed.push({ driver: d.name, reason });
      log.error({ err, driver: d.name, kept: kept.length }, 'discovery failed; its devices are kept as last observed, marked not observed');
    }
  }
  const unreadable = (path: string, err: unknown): void =>
    log.warn({ path, err }, "cannot read libvirt's running guests: the devices they hold are not adopted (the agent needs read access, as root has)");
  const held = scope.guestsDir ? guestHolds(all, await readGuests(scope.guestsDir, unreadable)) : [];
  if (held.length > 0) observed = { ...(observed ?? NOTHING_OBSERVED), guests: held };
  if (
    observed &&
    (observed.deployables.length > MAX_OBSERVED_PER_HOST ||
      observed.present.length > MAX_OBSERVED_PER_HOST ||
      (observed.guests?.length ?? 0) > MAX_OBSERVED_PER_HOST)
  ) {
    // Cut short, it would say "absent" of handles that exist: better none than a wrong one.
    log.warn(
      { deployables: observed.deployables.length, present: observed.present.length },
      'too much observed to report; the conductor compares nothing this time',
    );
    observed = undefined;
  }
  return { devices: all, ...(observed ? { observed } : {}), failed };
}

/** The driver that reported a device: its own word, or whoever discovered its deployables. */
function reportedBy(dev: DeviceT, scope: DiscoveryScope): string | undefined {
  const by = dev.deployables.map((dep) => scope.discoveredBy.get(dep.uuid)).find((n) => n !== undefined);
  return by ?? (scope.registry.get(dev.driver) ? dev.driver : undefined);
}
