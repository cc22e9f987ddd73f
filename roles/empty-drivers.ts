import type { Logger } from 'pino';
import { canDiscoverPartially, type Driver } from '../drivers/index.js';

/**
 * Says, once per driver, when an enabled driver's first discovery finds nothing: a vendor driver
 * enabled on a host without that hardware (or with sysfs elsewhere) would otherwise read as
 * "installed, 0 accelerators" and nothing more. The fake driver is left alone (it always has some).
 */
export function warnWhenNothingToDrive(drivers: Driver[], log: Logger, sysfsRoot: string): Driver[] {
  for (const d of drivers) {
    if (d.name === 'fake') continue;
    let first = true;
    const judge = (found: number): void => {
      if (first && found === 0) {
        log.warn(
          { driver: d.name, sysfsRoot },
          `[agent] enabled_drivers: ${d.name} finds nothing to drive on this host (no matching device under ${sysfsRoot}); it reports no accelerators. Disable it here, or check [generic_driver] sysfs_root`,
        );
      }
      first = false;
    };
    const discover = d.discover.bind(d);
    d.discover = async () => {
      const found = await discover();
      judge(found.length);
      return found;
    };
    // A driver that can discover partially (the NVIDIA one) is asked that way by the agent, never
    // through discover(): watched there too, or it said nothing at all (issue 42).
    if (canDiscoverPartially(d)) {
      const partial = d.discoverPartial.bind(d);
      d.discoverPartial = async () => {
        const found = await partial();
        judge(found.devices.length + found.unobserved.length);
        return found;
      };
    }
  }
  return drivers;
}
