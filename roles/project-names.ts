import type { Config } from '../config/index.js';
import { authMethod, KeystoneDirectory, KeystoneSession } from '../openstack/keystone/index.js';

/**
 * Keystone's names of projects for the allocation series' `project_name`
 * (`[conductor] metrics_consumer_labels`), or undefined where none is asked: consumer labels off,
 * or noauth (no service user to ask with). The api's own directory is used where this process has
 * one (the all-in-one); a conductor alone asks with `[keystone_authtoken]`'s service user, as the
 * api does. Cached and never waited for (`cachedProjectName`): a scrape answers at once, a name
 * learnt meanwhile is in the next one.
 */
export function metricsProjectNames(
  config: Pick<Config, 'v2' | 'keystoneAuthtoken' | 'conductor'>,
  own: KeystoneDirectory | null = null,
): ((projectId: string) => string | undefined) | undefined {
  if (!config.conductor.metricsConsumerLabels || config.v2.authStrategy !== 'keystone') return undefined;
  const k = config.keystoneAuthtoken;
  if (!own && !k.authUrl) return undefined;
  const directory =
    own ??
    new KeystoneDirectory({
      session: new KeystoneSession({ authUrl: k.authUrl!, auth: authMethod('keystone_authtoken', k), timeoutMs: k.httpConnectTimeout * 1000 }),
    });
  return (id) => directory.cachedProjectName(id);
}
