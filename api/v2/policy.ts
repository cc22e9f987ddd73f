import { v2Error } from './errors.js';
import { hasServiceToken, type AuthSettings, type Identity } from './identity.js';

type Check = (id: Identity) => boolean;

const role = (r: string): Check => (id) => id.roles.has(r);
const any = (...checks: Check[]): Check => (id) => checks.some((c) => c(id));
const serviceRole: Check = (id) => id.roles.has('service') || id.serviceRoles.has('service');

// Cyborg's base rules. The target is always the caller's own project, so `project_*` reduce to roles.
const admin = role('admin');
const readerOrAdmin = any(role('reader'), admin);
const managerOrAdmin = any(role('manager'), admin);
const memberOrService = any(role('member'), serviceRole);
/** Legacy `admin_or_owner`: any project-scoped token satisfies it. */
const adminOrOwner: Check = (id) => id.isAdmin || id.projectId !== null;

interface Rule {
  /** The 2026.2 default. */
  now: Check;
  /** The deprecated rule OR-ed in while `enforce_new_defaults` is false; none for new rules. */
  legacy?: Check;
}

/** Cyborg 2026.2's policy-in-code defaults (reference §4). */
export const RULES = {
  'cyborg:device_profile:get_all': { now: readerOrAdmin, legacy: adminOrOwner },
  'cyborg:device_profile:get_one': { now: readerOrAdmin, legacy: adminOrOwner },
  'cyborg:device_profile:create': { now: admin, legacy: admin },
  'cyborg:device_profile:delete': { now: admin, legacy: admin },
  'cyborg:arq:get_all': { now: readerOrAdmin, legacy: adminOrOwner },
  'cyborg:arq:get_one': { now: readerOrAdmin, legacy: adminOrOwner },
  'cyborg:arq:create': { now: memberOrService, legacy: any(role('member'), admin) },
  'cyborg:arq:update': { now: memberOrService, legacy: adminOrOwner },
  'cyborg:arq:delete': { now: memberOrService, legacy: adminOrOwner },
  'cyborg:device:get_all': { now: managerOrAdmin, legacy: admin },
  'cyborg:device:get_one': { now: managerOrAdmin, legacy: admin },
  'cyborg:device:enable': { now: admin },
  'cyborg:device:disable': { now: admin },
  'cyborg:deployable:get_all': { now: managerOrAdmin, legacy: admin },
  'cyborg:deployable:get_one': { now: managerOrAdmin, legacy: admin },
  'cyborg:deployable:program': { now: admin },
  'cyborg:attribute:get_all': { now: managerOrAdmin, legacy: admin },
  'cyborg:attribute:get_one': { now: managerOrAdmin, legacy: admin },
  'cyborg:attribute:create': { now: admin },
  'cyborg:attribute:delete': { now: admin },
} satisfies Record<string, Rule>;

export type RuleName = keyof typeof RULES;

/** Whether `id` passes `rule`; every rule is project-scoped, so a system-scoped token never does. */
export function allowed(rule: RuleName, id: Identity, auth: Pick<AuthSettings, 'enforceNewDefaults'>): boolean {
  if (id.systemScoped) return false;
  const r: Rule = RULES[rule];
  return r.now(id) || (!auth.enforceNewDefaults && r.legacy !== undefined && r.legacy(id));
}

/** Throws 403 naming the rule, as oslo.policy does. */
export function authorize(rule: RuleName, id: Identity, auth: Pick<AuthSettings, 'enforceNewDefaults'>): void {
  if (!allowed(rule, id, auth)) {
    throw v2Error('request.forbidden', `Policy doesn't allow ${rule} to be performed.`, { rule });
  }
}

/**
 * Bind, unbind and deleting bound ARQs need a service token (CVE-2026-40214), when configured;
 * the phrase "requires a service token" is what tempest checks for.
 */
export function requireServiceToken(action: string, id: Identity, auth: AuthSettings): void {
  if (auth.serviceTokenRequired && !hasServiceToken(id, auth)) {
    throw v2Error('request.forbidden', `${action} requires a service token with one of the roles: ${auth.serviceTokenRoles.join(', ')}`);
  }
}
