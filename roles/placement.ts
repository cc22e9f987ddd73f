import type { Logger } from 'pino';
import { placementLink, type PlacementLink } from '../actors/services/index.js';
import type { Config } from '../config/index.js';
import { placementClientFromConfig } from '../openstack/placement/index.js';
import { requestCounter } from '../openstack/placement/index.js';

/**
 * A conductor's Placement as configured: `PLACEMENT_URL` with a fixed token, or a Keystone
 * session (`[placement] auth_url`) that finds Placement in the catalog, and the sync's settings
 * from `[placement]`; without Placement it says so once. `createRootProvidersByDefault`: the
 * all-in-one (no Nova) creates the compute nodes' root providers itself.
 */
export function placementFromConfig(
  config: Pick<Config, 'placementUrl' | 'placementToken' | 'placement'>,
  log: Logger,
  createRootProvidersByDefault = false,
): PlacementLink {
  const client = placementClientFromConfig(config, (method, status) => requestCounter.inc({ method, status: String(status) }));
  if (!client) log.info('no Placement configured (PLACEMENT_URL or [placement] auth_url): accelerators are not reported to Placement');
  return placementLink(
    client ?? null,
    {
      resourceProviderName: config.placement.resourceProviderName,
      createRootProviders: config.placement.createRootProviders ?? createRootProvidersByDefault,
      intervalMs: config.placement.syncIntervalMs,
      concurrency: config.placement.concurrency,
    },
    log,
  );
}
