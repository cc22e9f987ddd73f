import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import type { Driver } from '../drivers/driver.js';
import { FakeDriver } from '../drivers/fake/index.js';
import { genericDriverFromConfig } from '../drivers/generic/from-config.js';

/**
 * The drivers of this host, as the operator enabled them (`[agent] enabled_drivers`, Cyborg's
 * option; `CYBORG_ENABLED_DRIVERS`). `[generic_driver] enabled` is the older spelling of naming
 * generic_driver there. A production agent enables none by default, so no fake accelerator lands
 * in a real inventory or in Placement.
 */
export function enabledDrivers(config: Config, log: Logger): Driver[] {
  const names = new Set(config.agent.enabledDrivers);
  if (config.generic.enabled) names.add('generic_driver');
  const drivers: Driver[] = [];
  if (names.has('fake_driver')) drivers.push(new FakeDriver({ host: config.host, ...config.fake }));
  if (names.has('generic_driver')) drivers.push(...genericDriverFromConfig({ ...config, generic: { ...config.generic, enabled: true } }, log));
  if (drivers.length === 0) log.warn('no driver is enabled on this host: it reports no accelerators (set [agent] enabled_drivers, e.g. generic_driver)');
  else log.info({ drivers: drivers.map((d) => d.name) }, 'drivers enabled');
  return drivers;
}
