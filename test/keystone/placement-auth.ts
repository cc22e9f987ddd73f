import { request } from 'undici';
import { KeystoneSession } from '../../openstack/keystone/index.js';
import { svc } from '../services.js';
import { KEYSTONE_URL, serviceAuth } from './peer.js';

/** Whether a Placement validates Keystone tokens (started with PLACEMENT_KEYSTONE_URL): noauth2's `admin` token then gets 401. */
export async function validatesKeystoneTokens(url: string): Promise<boolean> {
  try {
    const res = await request(`${url}/resource_providers`, { headers: { 'x-auth-token': 'admin' }, signal: AbortSignal.timeout(3_000) });
    await res.body.dump();
    return res.statusCode === 401;
  } catch {
    return false;
  }
}

const sharedValidates = svc.placement ? await validatesKeystoneTokens(svc.placement) : false;

/**
 * How tests authenticate to a Placement: the shared one validates Keystone tokens under .ci/run
 * (then the `cyborg` service user's session), private ones run noauth2 (the `admin` token).
 */
export function placementAuthFor(url: string): { token: string } | { session: KeystoneSession } {
  if (sharedValidates && url === svc.placement) {
    if (!svc.keystone) throw new Error(`Placement at ${url} validates Keystone tokens but no Keystone is reachable (KEYSTONE_URL)`);
    return { session: new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth(), endpointOverride: url }) };
  }
  return { token: 'admin' };
}

/** The environment a Cyborg process needs for that Placement: `[placement]`'s Keystone options when it validates tokens. */
export function placementEnvFor(url: string): Record<string, string> {
  if (!(sharedValidates && url === svc.placement)) return {};
  const a = serviceAuth();
  if (a.type !== 'password') throw new Error('the test service user authenticates with a password');
  return {
    PLACEMENT_AUTH_URL: KEYSTONE_URL,
    PLACEMENT_USERNAME: a.username,
    PLACEMENT_PASSWORD: a.password,
    PLACEMENT_PROJECT_NAME: a.projectName ?? 'service',
  };
}
