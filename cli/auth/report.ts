import { ApiError } from '../client.js';
import { SignInError } from './errors.js';
import type { AuthPlan } from './options.js';

/**
 * How a failure to do with signing in reads at a shell: a SignInError is one line with its own
 * exit code; a 401 from an API the CLI sent no token to says how to sign in. Undefined for
 * everything else (the command's usual error text applies).
 */
export function authFailure(err: unknown, plan: AuthPlan | undefined): { text: string; exitCode?: number } | undefined {
  if (err instanceof SignInError) return { text: `cyborg: ${err.message}\n`, exitCode: err.exitCode };
  if (err instanceof ApiError && err.status === 401 && (!plan || plan.kind === 'none')) {
    return {
      text: '  This API authenticates with Keystone: sign in as the openstack CLI does (OS_CLOUD with clouds.yaml, or OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME; see docs/cli.md).\n',
    };
  }
  return undefined;
}

/**
 * The deployment a command talks to, in words: the API's URL (or, before the catalog answered,
 * Keystone's catalog), and the cloud and region it was found in. `--verbose` prints it first and
 * every error ends with it: two deployments on one machine were told apart by nothing (issue 42).
 */
export function deploymentOf(plan: AuthPlan | undefined, url: string | undefined): string {
  const api = url ?? "the accelerator endpoint of Keystone's catalog";
  if (!plan) return api;
  if (plan.kind !== 'keystone') return `${api} (${plan.kind === 'token' ? 'a token as given' : 'no sign-in'})`;
  const parts = [plan.cloud ? `cloud ${plan.cloud}` : undefined, `region ${plan.region ?? '(any)'}`, `Keystone ${plan.authUrl}`];
  return `${api} (${parts.filter(Boolean).join(', ')})`;
}
