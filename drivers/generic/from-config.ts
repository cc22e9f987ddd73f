import type { Logger } from 'pino';
import type { Config } from '../../config/index.js';
import { GenericDriver } from './index.js';

const argv = (text: string): string[] | undefined => (text.trim() ? text.trim().split(/\s+/) : undefined);

/**
 * The generic driver as configured (`config.generic`), or nothing when it is not enabled. A bad
 * allow-list fails here, at boot, naming the fault.
 */
export function genericDriverFromConfig(config: Config, log?: Logger): GenericDriver[] {
  const g = config.generic;
  if (!g.enabled) return [];
  const commands = {
    ...(argv(g.installCommand) ? { install: argv(g.installCommand) } : {}),
    ...(argv(g.uninstallCommand) ? { uninstall: argv(g.uninstallCommand) } : {}),
    ...(argv(g.updateCommand) ? { update: argv(g.updateCommand) } : {}),
    ...(argv(g.programCommand) ? { program: argv(g.programCommand) } : {}),
  };
  const driver = new GenericDriver({
    host: config.host, sysfsRoot: g.sysfsRoot, allowList: g.passthroughWhitelist, hostOps: g.hostOps,
    helper: argv(g.helper) ?? [], commands, vfioDriver: g.vfioDriver, version: g.version,
  });
  log?.info({ driver: 'generic', sysfsRoot: g.sysfsRoot, hostOps: g.hostOps, allowList: g.passthroughWhitelist !== '' }, 'generic driver enabled');
  return [driver];
}
