import { join } from 'node:path';
import type { Config } from '../../config/index.js';
import { authMethod } from '../keystone/auth-method.js';
import { KeystoneSession } from '../keystone/session.js';
import { GlanceClient } from './client.js';
import { ImageStore } from './store.js';

export { GlanceClient, glanceError, type GlanceClientOptions, type GlanceImage } from './client.js';
export { ImageStore, type BitstreamSource, type FetchedImage, type ImageStoreOptions } from './store.js';

/**
 * `[glance]` as configured: the client and the download directory of an agent, or undefined
 * when neither an endpoint nor Keystone is set (programming by Glance id is then refused with
 * that reason). With `auth_url` the agent authenticates as the `[glance]` service user and finds
 * Glance in the catalog (`image`); `endpoint_override` alone calls it without a token.
 */
export function glanceFromConfig(config: Pick<Config, 'glance' | 'dataDir'>): ImageStore | undefined {
  const g = config.glance;
  if (!g.endpointOverride && !g.authUrl) return undefined;
  const session = g.authUrl
    ? new KeystoneSession({
        authUrl: g.authUrl,
        auth: authMethod('glance', g),
        serviceType: 'image',
        interfaces: g.validInterfaces,
        ...(g.regionName ? { region: g.regionName } : {}),
        ...(g.endpointOverride ? { endpointOverride: g.endpointOverride } : {}),
      })
    : undefined;
  const client = new GlanceClient({
    endpoint: session ? () => session.endpoint() : () => Promise.resolve(g.endpointOverride!),
    ...(session ? { token: () => session.token(), invalidate: (t: string) => session.invalidate(t) } : {}),
    timeoutMs: g.timeoutMs,
    retries: g.numRetries,
  });
  return new ImageStore({ client, dir: g.downloadDir ?? join(config.dataDir, 'images'), maxImageBytes: g.maxImageBytes, timeoutMs: g.timeoutMs });
}
