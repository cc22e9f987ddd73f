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
