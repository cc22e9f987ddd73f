import { KeystoneSession, KeystoneUnavailableError, ServiceAuthError, type AuthMethod, type KeystoneToken } from '../../openstack/keystone/index.js';
import type { CliTokenCache } from './token-cache.js';
import type { TokenSource } from '../client.js';
import { ClientConfigError, CredentialsRefusedError, KeystoneUnreachableError } from './errors.js';
import type { AuthPlan } from './options.js';

/** Where the CLI sends its requests, and the token it sends with them (none in noauth). */
export interface Connection {
  url: string;
  auth?: TokenSource;
}

/** The API's `--url` / `CYBORG_URL`, and whether the operator gave it (else: the catalog's). */
export interface UrlChoice {
  value: string;
  explicit: boolean;
}

/** Cyborg's service type in Keystone's catalog, as `openstack accelerator` looks it up. */
export const SERVICE_TYPE = 'accelerator';

/**
 * The API root behind a catalog URL: the catalog names Cyborg's versioned v2 endpoint
 * (`http://controller:6666/v2`); the operator API lives beside it, under `/cyborg/v1`.
 */
export function apiRoot(catalogUrl: string): string {
  return catalogUrl.replace(/\/+$/, '').replace(/\/v\d+(\.\d+)?$/, '');
}

function describe(a: AuthMethod): string {
  if (a.type === 'password') return `the password of user ${a.username}`;
  if (a.type === 'token') return 'the token given';
  return `application credential ${a.id ?? a.name}`;
}

/** Keystone's own reason from its error body (`{"error": {"message": …}}`), when it gave one. */
function keystoneReason(err: ServiceAuthError): string {
  const text = err.message.replace(/^[^:]*\): \d+ /, '');
  try {
    const m = (JSON.parse(text) as { error?: { message?: string } }).error?.message;
    if (m) return m;
  } catch {
    // not JSON: no reason to add
  }
  return '';
}

/** What the session's errors mean to a person at a shell, with the CLI's exit codes. */
function explain(err: unknown, plan: Extract<AuthPlan, { kind: 'keystone' }>): unknown {
  if (err instanceof ServiceAuthError) {
    const why = keystoneReason(err);
    return new CredentialsRefusedError(`Keystone at ${plan.authUrl} refused ${describe(plan.auth)} (${err.httpStatus}${why ? `: ${why}` : ''})`);
  }
  if (err instanceof KeystoneUnavailableError) return new KeystoneUnreachableError(err.message);
  return err;
}

/** The session's token, each failure as a SignInError; a token the API refused leaves the cache too. */
function tokens(session: KeystoneSession, plan: Extract<AuthPlan, { kind: 'keystone' }>, cache: CliTokenCache | undefined): TokenSource {
  return {
    token: () =>
      session.token().catch((err: unknown) => {
        throw explain(err, plan);
      }),
    invalidate: (token) => {
      session.invalidate(token);
      cache?.clear();
      return true;
    },
  };
}

/**
 * Signs in as the plan says and finds the API: `--url` when given, else the `accelerator`
 * endpoint of Keystone's catalog for the region and interface asked for. Failures are
 * SignInErrors: refused credentials (exit 7), Keystone unreachable (6), no endpoint (8).
 */
export async function connect(plan: AuthPlan, url: UrlChoice, timeoutMs: number, cache?: CliTokenCache): Promise<Connection> {
  if (plan.kind === 'none') return { url: url.value };
  if (plan.kind === 'token') {
    if (!url.explicit) throw new ClientConfigError('a token without a Keystone URL has no catalog to find the API in: give --url / CYBORG_URL, or OS_AUTH_URL');
    return { url: url.value, auth: { token: () => Promise.resolve(plan.token), invalidate: () => false } };
  }
  // A token kept by an earlier command, while it is valid: no Keystone call at all (the catalog comes with it).
  const seed = cache?.load();
  const session = new KeystoneSession({
    authUrl: plan.authUrl,
    auth: plan.auth,
    serviceType: SERVICE_TYPE,
    interfaces: [plan.interface],
    timeoutMs,
    ...(plan.region ? { region: plan.region } : {}),
    ...(seed ? { seed } : {}),
    ...(cache ? { onAuthenticated: (token: string, data: KeystoneToken) => cache.save(token, data) } : {}),
  });
  const auth = tokens(session, plan, cache);
  if (url.explicit) {
    await auth.token();
    return { url: url.value, auth };
  }
  try {
    return { url: apiRoot(await session.endpoint()), auth };
  } catch (err) {
    const explained = explain(err, plan);
    if (explained !== err || !(err instanceof Error && err.message.startsWith("Keystone's catalog has no"))) throw explained;
    throw new ClientConfigError(
      `Keystone's catalog has no ${SERVICE_TYPE} endpoint for interface ${plan.interface}${plan.region ? ` in region ${plan.region}` : ''}: give --url / CYBORG_URL, or another OS_INTERFACE / OS_REGION_NAME`,
    );
  }
}
