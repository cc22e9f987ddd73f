import type { Logger } from 'pino';
import type { Driver } from '../drivers/index.js';

/**
 * Says, once per driver, when an enabled driver's first discovery finds nothing: a vendor driver
 * enabled on a host without that hardware (or with sysfs elsewhere) would otherwise read as
 * "installed, 0 accelerators" and nothing more. The fake driver is left alone (it always has some).
 */
export function warnWhenNothingToDrive(drivers: Driver[], log: Logger, sysfsRoot: string): Driver[] {
  for (const d of drivers) {
    if (d.name === 'fake') continue;
    const discover = d.discover.bind(d);
    let first = true;
    d.discover = async () => {
      const found = await discover();
      if (first && found.length === 0) {
        log.warn(
          { driver: d.name, sysfsRoot },
          `[agent] enabled_drivers: ${d.name} finds nothing to drive on this host (no matching device under ${sysfsRoot}); it reports no accelerators. Disable it here, or check [generic_driver] sysfs_root`,
        );
      }
      first = false;
      return found;
    };
  }
  return drivers;
}
