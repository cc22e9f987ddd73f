import { CYBORG_RULES, Enforcer, type Credentials, type Target } from '../../policy/index.js';
import { CyborgError } from '../../errors/index.js';
import { hasServiceToken, type AuthSettings, type Identity } from './identity.js';

/**
 * Cyborg 2026.2's policy-in-code defaults (reference §4) now live as rule strings in
 * policy/cyborg-rules.ts, enforced by policy/enforcer.ts and overridable from policy.yaml.
 */
export type RuleName =
  | 'cyborg:device_profile:get_all'
  | 'cyborg:device_profile:get_one'
  | 'cyborg:device_profile:create'
  | 'cyborg:device_profile:delete'
  | 'cyborg:arq:get_all'
  | 'cyborg:arq:get_one'
  | 'cyborg:arq:create'
  | 'cyborg:arq:update'
  | 'cyborg:arq:delete'
  | 'cyborg:device:get_all'
  | 'cyborg:device:get_one'
  | 'cyborg:device:enable'
  | 'cyborg:device:disable'
  | 'cyborg:deployable:get_all'
  | 'cyborg:deployable:get_one'
  | 'cyborg:deployable:program'
  | 'cyborg:attribute:get_all'
  | 'cyborg:attribute:get_one'
  | 'cyborg:attribute:create'
  | 'cyborg:attribute:delete';

/** One Enforcer per `enforce_new_defaults` value for callers that bring none (tests, benchmarks): the defaults only. */
const defaults = new Map<boolean, Enforcer>();

/** The enforcer in force for these settings. */
export function enforcerOf(auth: Pick<AuthSettings, 'enforcer' | 'enforceNewDefaults'>): Enforcer {
  if (auth.enforcer) return auth.enforcer;
  let e = defaults.get(auth.enforceNewDefaults);
  if (!e) {
    e = new Enforcer(CYBORG_RULES, { enforceNewDefaults: auth.enforceNewDefaults, enforceScope: true });
    defaults.set(auth.enforceNewDefaults, e);
  }
  return e;
}

/** oslo.context's `to_policy_values()` for an identity. */
export function credentials(id: Identity): Credentials {
  return {
    roles: [...id.roles],
    user_id: id.userId,
    project_id: id.projectId,
    domain_id: id.domainId ?? null,
    system_scope: id.systemScoped ? 'all' : null,
    is_admin: id.isAdmin,
    service_roles: [...id.serviceRoles],
  };
}

/** Cyborg's target: always the caller's own project and user (keys left out when unknown, so `project_id:%(project_id)s` fails). */
export function ownTarget(id: Identity): Target {
  const t: Target = {};
  if (id.projectId) t.project_id = id.projectId;
  if (id.userId) t.user_id = id.userId;
  return t;
}

/** Whether `id` passes `rule` (a v2 rule, or an operator rule of policy/cyborg-rules.ts). */
export function allowed(rule: RuleName | string, id: Identity, auth: Pick<AuthSettings, 'enforcer' | 'enforceNewDefaults'>): boolean {
  return enforcerOf(auth).enforce(rule, ownTarget(id), credentials(id));
}

/** Throws 403 naming the rule, as oslo.policy does. */
export function authorize(rule: RuleName | string, id: Identity, auth: Pick<AuthSettings, 'enforcer' | 'enforceNewDefaults'>): void {
  if (!allowed(rule, id, auth)) {
    throw new CyborgError('request.forbidden', `Policy doesn't allow ${rule} to be performed.`, { rule });
  }
}

/**
 * Bind, unbind and deleting bound ARQs need a service token (CVE-2026-40214), when configured;
 * the phrase "requires a service token" is what tempest checks for.
 */
export function requireServiceToken(action: string, id: Identity, auth: AuthSettings): void {
  if (auth.serviceTokenRequired && !hasServiceToken(id, auth)) {
    throw new CyborgError('request.forbidden', `${action} requires a service token with one of the roles: ${auth.serviceTokenRoles.join(', ')}`);
  }
}
