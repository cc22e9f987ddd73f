import type { RuleDefault, ScopeType } from './enforcer.js';

const PROJECT: ScopeType[] = ['project'];
/** The operator API is the cloud operator's: a system-scoped admin token fits it as well as a project one. */
const OPERATOR: ScopeType[] = ['system', 'project'];

/** Cyborg's base rules (cyborg/policies/base.py), referred to as `rule:<name>`. */
const BASE: RuleDefault[] = [
  { name: 'admin_api', check: 'role:admin', description: 'Legacy rule for cloud admin access' },
  { name: 'admin_or_owner', check: 'is_admin:True or project_id:%(project_id)s', description: "Legacy rule: an admin, or any token of the target's project" },
  { name: 'project_member_api', check: 'role:member and project_id:%(project_id)s', description: "A member of the target's project" },
  { name: 'project_reader_api', check: 'role:reader and project_id:%(project_id)s', description: "A reader of the target's project" },
  { name: 'project_manager_api', check: 'role:manager and project_id:%(project_id)s', description: "A manager of the target's project" },
  // Cyborg 2026.2 (after CVE-2026-40213): a service token proves that a service forwarded the call;
  // it is no role of the caller, so it never lets a reader act as a service.
  { name: 'service_api', check: 'role:service', description: "A service (Nova): the service role in the caller's own token" },
  { name: 'project_member_or_admin', check: 'rule:project_member_api or rule:admin_api', description: 'Project member or admin' },
  { name: 'project_reader_or_admin', check: 'rule:project_reader_api or rule:admin_api', description: 'Project reader or admin' },
  { name: 'project_manager_or_admin', check: 'rule:project_manager_api or rule:admin_api', description: 'Project manager or admin' },
  { name: 'project_member_or_service', check: 'rule:project_member_api or rule:service_api', description: 'Project member or a service' },
  {
    name: 'operator_reader_api',
    check: 'role:reader',
    description: "Reads of the operator API (/cyborg/v1) that are filtered to the caller's project: any reader",
  },
  // As Cyborg 2026.2's devices and deployables: the whole fleet is the cloud operator's to read.
  {
    name: 'operator_fleet_reader_api',
    check: 'role:admin or (role:reader and system_scope:all)',
    description: 'Fleet-wide reads of the operator API: an admin, or a system-scoped reader',
  },
  { name: 'operator_admin_api', check: 'role:admin', description: 'Changes through the operator API (/cyborg/v1): admins' },
];

function v2(name: string, check: string, operations: string[], deprecated?: string): RuleDefault {
  return {
    name,
    check,
    scopeTypes: PROJECT,
    operations,
    description: `Cyborg v2: ${operations.join(', ')}`,
    ...(deprecated ? { deprecated: { check: deprecated, reason: 'Cyborg 2026.2 moved to the reader / member / manager personas' } } : {}),
  };
}

/** Cyborg 2026.2's v2 rules (reference §4): new defaults, each with the deprecated rule it replaced. */
const V2: RuleDefault[] = [
  v2('cyborg:device_profile:get_all', 'rule:project_reader_or_admin', ['GET /v2/device_profiles'], 'rule:admin_or_owner'),
  v2('cyborg:device_profile:get_one', 'rule:project_reader_or_admin', ['GET /v2/device_profiles/{uuid}'], 'rule:admin_or_owner'),
  v2('cyborg:device_profile:create', 'rule:admin_api', ['POST /v2/device_profiles'], 'is_admin:True'),
  v2('cyborg:device_profile:delete', 'rule:admin_api', ['DELETE /v2/device_profiles/{uuid}', 'DELETE /v2/device_profiles?value='], 'is_admin:True'),
  v2('cyborg:arq:get_all', 'rule:project_reader_or_admin', ['GET /v2/accelerator_requests'], 'rule:admin_or_owner'),
  v2('cyborg:arq:get_one', 'rule:project_reader_or_admin', ['GET /v2/accelerator_requests/{uuid}'], 'rule:admin_or_owner'),
  v2('cyborg:arq:create', 'rule:project_member_or_service', ['POST /v2/accelerator_requests'], 'rule:project_member_or_admin'),
  v2('cyborg:arq:update', 'rule:project_member_or_service', ['PATCH /v2/accelerator_requests'], 'rule:admin_or_owner'),
  v2('cyborg:arq:delete', 'rule:project_member_or_service', ['DELETE /v2/accelerator_requests'], 'rule:admin_or_owner'),
  v2('cyborg:device:get_all', 'rule:project_manager_or_admin', ['GET /v2/devices'], 'rule:admin_api'),
  v2('cyborg:device:get_one', 'rule:project_manager_or_admin', ['GET /v2/devices/{uuid}'], 'rule:admin_api'),
  v2('cyborg:device:enable', 'rule:admin_api', ['POST /v2/devices/{uuid}/enable']),
  v2('cyborg:device:disable', 'rule:admin_api', ['POST /v2/devices/{uuid}/disable']),
  v2('cyborg:deployable:get_all', 'rule:project_manager_or_admin', ['GET /v2/deployables'], 'rule:admin_api'),
  v2('cyborg:deployable:get_one', 'rule:project_manager_or_admin', ['GET /v2/deployables/{uuid}'], 'rule:admin_api'),
  v2('cyborg:deployable:program', 'rule:admin_api', ['PATCH /v2/deployables/{uuid}/program']),
  v2('cyborg:attribute:get_all', 'rule:project_manager_or_admin', ['GET /v2/attributes'], 'rule:admin_api'),
  v2('cyborg:attribute:get_one', 'rule:project_manager_or_admin', ['GET /v2/attributes/{uuid}'], 'rule:admin_api'),
  v2('cyborg:attribute:create', 'rule:admin_api', ['POST /v2/attributes']),
  v2('cyborg:attribute:delete', 'rule:admin_api', ['DELETE /v2/attributes/{uuid}']),
];

function op(name: string, check: 'rule:operator_reader_api' | 'rule:operator_fleet_reader_api' | 'rule:operator_admin_api', operations: string[]): RuleDefault {
  return { name, check, scopeTypes: OPERATOR, operations, description: `Operator API: ${operations.join(', ')}` };
}

const P = '/cyborg/v1';

/**
 * This project's operator API (`/cyborg/v1`) and its event stream: fleet-wide reads (hosts,
 * drivers, services, the fleet's accelerators) for admins and system-scoped readers; reads that
 * api/scope.ts filters to the caller's project (snapshot, events, history, audit, projects, an
 * accelerator's usage) for any reader; changes for admins.
 */
const OPERATOR_RULES: RuleDefault[] = [
  op('cyborg:operator:host:get', 'rule:operator_fleet_reader_api', [`GET ${P}/hosts`, `GET ${P}/hosts/{name}`, `GET ${P}/hosts/{host}/drain`]),
  op('cyborg:operator:accelerator:get', 'rule:operator_fleet_reader_api', [`GET ${P}/accelerators`, `GET ${P}/accelerators/{id}`]),
  // Usage telemetry and who holds what (api/routes/usage.ts): reads.
  op('cyborg:operator:usage:get', 'rule:operator_reader_api', [`GET ${P}/accelerators/{id}/usage`, `GET ${P}/hosts/{name}/usage`]),
  op('cyborg:operator:project:get', 'rule:operator_reader_api', [`GET ${P}/projects`]),
  op('cyborg:operator:capacity:get', 'rule:operator_fleet_reader_api', [`GET ${P}/capacity`]),
  // Not a route: whether a caller reads the whole fleet (unfiltered) or only its own project's
  // consumers, ARQs, instances, usage and audit rows on the filtered reads (api/scope.ts).
  {
    name: 'cyborg:operator:scope:fleet',
    check: 'rule:operator_fleet_reader_api',
    scopeTypes: OPERATOR,
    description: "Operator API: reads the whole fleet; without it, the filtered reads show only the caller's project",
  },
  ...['enable', 'disable', 'retry', 'remove', 'program', 'attach', 'detach'].map((a) =>
    op(`cyborg:operator:accelerator:${a}`, 'rule:operator_admin_api', [`POST ${P}/accelerators/{id}/${a}`]),
  ),
  // Health and maintenance (api/routes/maintenance.ts): changes, so admins by default.
  op('cyborg:operator:accelerator:reset', 'rule:operator_admin_api', [`POST ${P}/accelerators/{id}/reset`]),
  op('cyborg:operator:accelerator:clear_health', 'rule:operator_admin_api', [`POST ${P}/accelerators/{id}/clear-health`]),
  op('cyborg:operator:accelerator:release', 'rule:operator_admin_api', [`POST ${P}/accelerators/{id}/release`]),
  op('cyborg:operator:accelerator:maintenance', 'rule:operator_admin_api', [`POST ${P}/accelerators/{id}/maintenance`]),
  op('cyborg:operator:accelerator:maintenance_cancel', 'rule:operator_admin_api', [`DELETE ${P}/accelerators/{id}/maintenance`]),
  op('cyborg:operator:host:drain', 'rule:operator_admin_api', [`POST ${P}/hosts/{host}/drain`]),
  op('cyborg:operator:host:delete', 'rule:operator_admin_api', [`DELETE ${P}/hosts/{name}`]),
  op('cyborg:operator:host:relayout', 'rule:operator_admin_api', [`POST ${P}/hosts/{host}/layout`]),
  op('cyborg:operator:fake:fault', 'rule:operator_admin_api', [`POST ${P}/accelerators/{id}/fake-fault`]),
  op('cyborg:operator:host:drain_cancel', 'rule:operator_admin_api', [`DELETE ${P}/hosts/{host}/drain`]),
  // Who the caller is and which operator rules it passes: any valid token may ask about itself.
  {
    name: 'cyborg:operator:auth:whoami',
    check: '@',
    scopeTypes: OPERATOR,
    operations: [`GET ${P}/auth/whoami`],
    description: "Operator API: the caller's identity and the operator rules it passes",
  },
  op('cyborg:operator:event:snapshot', 'rule:operator_reader_api', [`GET ${P}/snapshot`]),
  op('cyborg:operator:event:history', 'rule:operator_reader_api', [`GET ${P}/history/{id}`]),
  op('cyborg:operator:audit:get_all', 'rule:operator_reader_api', [`GET ${P}/audit`]),
  op('cyborg:operator:event:stream', 'rule:operator_reader_api', [`GET ${P}/events`]),
  op('cyborg:operator:machine:get', 'rule:operator_reader_api', [`GET ${P}/machines`]),
  op('cyborg:operator:driver:get', 'rule:operator_fleet_reader_api', [`GET ${P}/drivers`, `GET ${P}/drivers/{ref}`]),
  ...['install', 'uninstall', 'update'].map((a) => op(`cyborg:operator:driver:${a}`, 'rule:operator_admin_api', [`POST ${P}/drivers/{ref}/${a}`])),
  op('cyborg:operator:service:get', 'rule:operator_fleet_reader_api', [`GET ${P}/services`]),
  op('cyborg:operator:service:discover', 'rule:operator_admin_api', [`POST ${P}/services/discover`]),
  op('cyborg:operator:instance:attach', 'rule:operator_admin_api', [`POST ${P}/instances/{uuid}/attach`]),
  op('cyborg:operator:instance:detach', 'rule:operator_admin_api', [`POST ${P}/instances/{uuid}/detach`]),
];

/** Every rule this service registers, in code; `policy.yaml` may override any of them. */
export const CYBORG_RULES: readonly RuleDefault[] = [...BASE, ...V2, ...OPERATOR_RULES];

export const CYBORG_RULE_NAMES: ReadonlySet<string> = new Set(CYBORG_RULES.map((r) => r.name));
