import { Option, type Command } from 'commander';
import type { AuthMethod } from '../../openstack/keystone/index.js';
import { defaultSearchContext, findCloud, type CloudEntry, type SearchContext } from './clouds.js';
import { ClientConfigError } from './errors.js';

/**
 * The `--os-*` options of the `openstack` CLI, each with its `OS_*` variable: a flag wins over
 * its variable, which wins over the cloud's entry in clouds.yaml (as in openstackclient, whose
 * argparse defaults are the variables). Keys are clouds.yaml's `auth:` keys.
 */
const FLAGS: [key: string, flag: string, env: string, what: string][] = [
  ['cloud', '--os-cloud', 'OS_CLOUD', 'a cloud of clouds.yaml (./, ~/.config/openstack/, /etc/openstack/; secure.yaml merged)'],
  ['auth_url', '--os-auth-url', 'OS_AUTH_URL', "Keystone's URL"],
  ['auth_type', '--os-auth-type', 'OS_AUTH_TYPE', 'password, v3applicationcredential, token, admin_token or none'],
  ['username', '--os-username', 'OS_USERNAME', 'user name'],
  ['password', '--os-password', 'OS_PASSWORD', 'password'],
  ['project_name', '--os-project-name', 'OS_PROJECT_NAME', 'project to scope the token to'],
  ['project_id', '--os-project-id', 'OS_PROJECT_ID', 'project id to scope the token to'],
  ['user_domain_name', '--os-user-domain-name', 'OS_USER_DOMAIN_NAME', "the user's domain (default Default)"],
  ['user_domain_id', '--os-user-domain-id', 'OS_USER_DOMAIN_ID', "the user's domain id"],
  ['project_domain_name', '--os-project-domain-name', 'OS_PROJECT_DOMAIN_NAME', "the project's domain (default Default)"],
  ['project_domain_id', '--os-project-domain-id', 'OS_PROJECT_DOMAIN_ID', "the project's domain id"],
  ['system_scope', '--os-system-scope', 'OS_SYSTEM_SCOPE', 'all: a system-scoped token instead of a project one'],
  ['region_name', '--os-region-name', 'OS_REGION_NAME', "region of the catalog's endpoint"],
  ['interface', '--os-interface', 'OS_INTERFACE', 'public (default), internal or admin endpoint'],
  ['token', '--os-token', 'OS_TOKEN', 'a Keystone token (with --url and no auth URL: sent as it is)'],
  ['application_credential_id', '--os-application-credential-id', 'OS_APPLICATION_CREDENTIAL_ID', 'application credential id'],
  ['application_credential_name', '--os-application-credential-name', 'OS_APPLICATION_CREDENTIAL_NAME', 'application credential name (with --os-username)'],
  ['application_credential_secret', '--os-application-credential-secret', 'OS_APPLICATION_CREDENTIAL_SECRET', 'application credential secret'],
];

const GROUP = 'OpenStack authentication (as the openstack CLI; none: noauth):';

/** Adds the `--os-*` options (and their `OS_*` variables) to a command that talks to the API. */
export function addOpenStackOptions(cmd: Command): Command {
  for (const [, flag, env, what] of FLAGS) cmd.addOption(new Option(`${flag} <value>`, what).env(env).helpGroup(GROUP));
  return cmd;
}

/** How the CLI reaches the API: as before (noauth), with a token as given, or signed in to Keystone. */
export type AuthPlan =
  | { kind: 'none' }
  | { kind: 'token'; token: string }
  | { kind: 'keystone'; authUrl: string; auth: AuthMethod; region?: string; interface: string; cloud?: string; cacheAuth?: boolean };

/** The `--os-*` values as commander parsed them (flag, else variable), by clouds.yaml key. */
export function openStackValues(cmd: Command): Record<string, string> {
  const opts = cmd.opts<Record<string, unknown>>();
  const out: Record<string, string> = {};
  for (const [key, flag] of FLAGS) {
    const name = flag.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    const v = opts[name];
    if (typeof v === 'string' && v !== '') out[key] = v;
  }
  return out;
}

const AUTH_TYPES: Record<string, 'password' | 'application_credential' | 'token' | 'admin_token' | 'none'> = {
  password: 'password',
  v3password: 'password',
  v3applicationcredential: 'application_credential',
  applicationcredential: 'application_credential',
  application_credential: 'application_credential',
  token: 'token',
  v3token: 'token',
  admin_token: 'admin_token',
  token_endpoint: 'admin_token',
  none: 'none',
  noauth: 'none',
};

/**
 * The plan for these options: `OS_CLOUD`'s entry under the flags and variables; an application
 * credential where a secret is given, a token where a token is, else a password. Nothing at all
 * given: noauth, as the CLI always worked. Throws ClientConfigError naming what is missing.
 */
export function planAuth(given: Record<string, string>, ctx: SearchContext = defaultSearchContext()): AuthPlan {
  const cloud: CloudEntry | undefined = given.cloud ? findCloud(given.cloud, ctx) : undefined;
  const fromCloud = (k: string): string | undefined => {
    const v = cloud?.auth?.[k] ?? cloud?.[k];
    return typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined;
  };
  const v = (k: string): string | undefined => given[k] ?? fromCloud(k);
  const typeName = v('auth_type');
  const type = typeName === undefined ? undefined : AUTH_TYPES[typeName.toLowerCase()];
  if (typeName !== undefined && !type)
    throw new ClientConfigError(`auth type "${typeName}" is not one this CLI speaks (${Object.keys(AUTH_TYPES).join(', ')})`);
  if (type === 'none') return { kind: 'none' };
  const authUrl = v('auth_url');
  const token = v('token');
  if (type === 'admin_token' || (token && !authUrl)) {
    if (!token) throw new ClientConfigError(`auth type ${typeName} needs a token (--os-token / OS_TOKEN)`);
    return { kind: 'token', token };
  }
  const anything =
    cloud !== undefined || authUrl !== undefined || ['username', 'password', 'application_credential_id', 'application_credential_secret'].some((k) => v(k));
  if (!anything) return { kind: 'none' };
  const where = cloud ? ` (cloud ${given.cloud})` : '';
  if (!authUrl) throw new ClientConfigError(`no Keystone URL to sign in to${where}: set OS_AUTH_URL, --os-auth-url or auth_url in clouds.yaml`);
  const region = v('region_name') ?? firstRegion(cloud);
  const plan = (auth: AuthMethod): AuthPlan => ({
    kind: 'keystone',
    authUrl,
    auth,
    interface: (v('interface') ?? 'public').replace(/URL$/, '').toLowerCase(),
    ...(region ? { region } : {}),
    ...(given.cloud ? { cloud: given.cloud } : {}),
    // openstacksdk's `cache: {auth: true}`: the user allows tokens kept across commands.
    ...((cloud?.cache as { auth?: unknown } | undefined)?.auth === true ? { cacheAuth: true } : {}),
  });
  const scope = {
    ...(v('project_id') ? { projectId: v('project_id') } : v('project_name') ? { projectName: v('project_name') } : {}),
    ...(v('project_domain_id') ? { projectDomainId: v('project_domain_id') } : { projectDomainName: v('project_domain_name') ?? 'Default' }),
    ...(v('system_scope') === 'all' ? { systemScope: 'all' as const } : {}),
  };
  if (type === 'application_credential' || (!type && v('application_credential_secret'))) {
    const secret = v('application_credential_secret');
    const id = v('application_credential_id');
    const name = v('application_credential_name');
    if (!secret || !(id || (name && v('username')))) {
      throw new ClientConfigError(
        `an application credential${where} needs its secret and its id (or its name and the user name): OS_APPLICATION_CREDENTIAL_SECRET, OS_APPLICATION_CREDENTIAL_ID`,
      );
    }
    return plan({
      type: 'application_credential',
      secret,
      ...(id ? { id } : { name, username: v('username'), userDomainName: v('user_domain_name') ?? 'Default' }),
    });
  }
  if (type === 'token' || (!type && token && !v('password'))) {
    if (!token) throw new ClientConfigError(`auth type ${typeName} needs a token (--os-token / OS_TOKEN)`);
    return plan({ type: 'token', token, ...scope });
  }
  const username = v('username');
  const password = v('password');
  if (!username) throw new ClientConfigError(`no user to sign in as${where}: set OS_USERNAME, --os-username or username in clouds.yaml`);
  if (password === undefined)
    throw new ClientConfigError(`no password for user ${username}${where}: set OS_PASSWORD, --os-password, or password in clouds.yaml or secure.yaml`);
  return plan({
    type: 'password',
    username,
    password,
    ...(v('user_domain_id') ? { userDomainId: v('user_domain_id') } : { userDomainName: v('user_domain_name') ?? 'Default' }),
    ...scope,
  });
}

function firstRegion(cloud: CloudEntry | undefined): string | undefined {
  const r = cloud?.regions?.[0];
  return typeof r === 'string' ? r : r?.name;
}
