/**
 * The tenancy matrix's expectations: for every route of the OpenAPI document, which personas get
 * through and what they get. Project A is Keystone's `demo`, project B `other`; "Nova" is the
 * peer's `nova` user (role `service` only). tenancy.test.ts fails on a route missing here.
 */
export const PERSONAS = [
  'admin',
  'memberA',
  'readerA',
  'managerA',
  'memberB',
  'service',
  'serviceWithToken',
  'readerWithServiceToken',
  'anonymous',
  'revoked',
  'expired',
] as const;
export type Persona = (typeof PERSONAS)[number];

export interface Expectation {
  /**
   * What a persona that gets through receives (the test aims writes at absent targets, so their
   * "through" is usually 404 or 400). `open`: no identity needed; every persona gets the same.
   */
  ok: number | 'open';
  /** Who gets through; everyone else authenticated gets 403; anonymous, revoked and expired 401. */
  through: readonly Persona[];
  /** Who gets through the policy but finds nothing of its own there (another project's object). */
  hidden?: readonly Persona[];
}

const ADMIN: readonly Persona[] = ['admin'];
/** Project-scoped tokens with the reader role (implied by member and manager, and admin). */
const READERS: readonly Persona[] = ['admin', 'memberA', 'readerA', 'managerA', 'memberB', 'readerWithServiceToken'];
/** Every valid token: Nova's (role service only) too. */
const ANY: readonly Persona[] = [...READERS, 'service', 'serviceWithToken'];
/** Cyborg's arq:create (legacy OR new): members and the service role; a reader's service token adds nothing (Cyborg 2026.2). */
const CREATORS: readonly Persona[] = ['admin', 'memberA', 'managerA', 'memberB', 'service', 'serviceWithToken'];
/** Bind, unbind, delete by instance: the policy (legacy admin_or_owner lets any project token) and a service token. */
const WITH_SERVICE_TOKEN: readonly Persona[] = ['serviceWithToken', 'readerWithServiceToken'];
const MANAGERS: readonly Persona[] = ['admin', 'managerA'];
/** Project A's ARQ is invisible outside A (the admin sees every project's). */
const NOT_A: readonly Persona[] = ['memberB', 'service', 'serviceWithToken'];

const open: Expectation = { ok: 'open', through: [] };
const fleetRead: Expectation = { ok: 200, through: ADMIN };
const projectRead: Expectation = { ok: 200, through: READERS };
/** An operator write aimed at something absent: the admin passes the policy and finds nothing. */
const adminWrite = (ok = 404): Expectation => ({ ok, through: ADMIN });

const P = '/cyborg/v1';

export const EXPECTATIONS: Record<string, Expectation> = {
  'GET /healthz': open,
  'GET /readyz': open,
  'GET /': open,
  'GET /v2/': open,
  'GET /ui': open,
  'GET /ui/{*}': open,
  [`GET ${P}/auth/mode`]: open,
  // Sign-in takes no token; an empty body is the schema's 400 for anyone.
  [`POST ${P}/auth/tokens`]: open,
  [`GET ${P}/auth/whoami`]: { ok: 200, through: ANY },
  // The visualizer's session cookie (api/routes/session.ts): signing in and out take no token.
  [`POST ${P}/auth/session`]: open,
  [`DELETE ${P}/auth/session`]: open,
  // Renewing wants a valid identity first; an empty body is then the schema's 400.
  [`POST ${P}/auth/session/renew`]: { ok: 400, through: ANY },

  // Fleet-wide by nature: the admin (or a system-scoped reader) only.
  [`GET ${P}/hosts`]: fleetRead,
  [`GET ${P}/hosts/{name}`]: fleetRead,
  [`GET ${P}/hosts/{host}/drain`]: fleetRead,
  [`GET ${P}/accelerators`]: fleetRead,
  [`GET ${P}/accelerators/{id}`]: fleetRead,
  [`GET ${P}/drivers`]: fleetRead,
  [`GET ${P}/drivers/{ref}`]: fleetRead,
  [`GET ${P}/services`]: fleetRead,
  [`GET ${P}/capacity`]: fleetRead,

  // Filtered to the caller's project (api/scope.ts).
  [`GET ${P}/snapshot`]: projectRead,
  [`GET ${P}/events`]: projectRead,
  [`GET ${P}/history/{id}`]: projectRead,
  [`GET ${P}/audit`]: projectRead,
  [`GET ${P}/projects`]: projectRead,
  [`GET ${P}/machines`]: projectRead,
  [`GET ${P}/hosts/{name}/usage`]: projectRead,
  // The card both projects hold a slot of: each of them reads its usage; Nova has no reader role.
  [`GET ${P}/accelerators/{id}/usage`]: projectRead,

  // Changes: admins, on absent targets.
  ...Object.fromEntries(
    ['enable', 'disable', 'retry', 'remove', 'program', 'attach', 'detach', 'reset', 'clear-health', 'maintenance'].map((a) => [
      `POST ${P}/accelerators/{id}/${a}`,
      adminWrite(),
    ]),
  ),
  [`DELETE ${P}/accelerators/{id}/maintenance`]: adminWrite(),
  // Its body names the instance to release: an empty one is the schema's 400.
  [`POST ${P}/accelerators/{id}/release`]: adminWrite(400),
  [`POST ${P}/hosts/{host}/drain`]: adminWrite(),
  [`DELETE ${P}/hosts/{host}/drain`]: adminWrite(),
  // An empty body is not a layout: the schema's 400, once the policy let the admin through.
  [`POST ${P}/hosts/{host}/layout`]: adminWrite(400),
  [`POST ${P}/drivers/{ref}/install`]: adminWrite(),
  [`POST ${P}/drivers/{ref}/uninstall`]: adminWrite(),
  [`POST ${P}/drivers/{ref}/update`]: adminWrite(),
  [`POST ${P}/services/discover`]: adminWrite(200),
  [`POST ${P}/instances/{instanceUuid}/attach`]: adminWrite(),
  // Detaching an instance that holds nothing is an idempotent 200.
  [`POST ${P}/instances/{instanceUuid}/detach`]: adminWrite(200),

  // Cyborg's v2 API, with its 2026.2 defaults OR-ed with the deprecated rules (its default mode).
  'GET /v2/device_profiles': { ok: 200, through: ANY },
  'GET /v2/device_profiles/{id}': { ok: 200, through: ANY },
  'POST /v2/device_profiles': { ok: 201, through: ADMIN },
  'DELETE /v2/device_profiles': { ok: 404, through: ADMIN },
  'DELETE /v2/device_profiles/{uuid}': { ok: 404, through: ADMIN },
  'GET /v2/accelerator_requests': { ok: 200, through: ANY },
  'GET /v2/accelerator_requests/{uuid}': { ok: 200, through: ANY, hidden: NOT_A },
  'POST /v2/accelerator_requests': { ok: 201, through: CREATORS },
  // A bind of an ARQ that does not exist: through the policy and the service token check, then 404.
  'PATCH /v2/accelerator_requests': { ok: 404, through: WITH_SERVICE_TOKEN },
  'PATCH /v2/accelerator_requests/{uuid}': { ok: 404, through: WITH_SERVICE_TOKEN },
  // By instance (idempotent): the service token is what is asked for.
  'DELETE /v2/accelerator_requests': { ok: 204, through: WITH_SERVICE_TOKEN },
  'DELETE /v2/accelerator_requests/{uuid}': { ok: 404, through: ANY },
  'GET /v2/devices': { ok: 200, through: MANAGERS },
  'GET /v2/devices/{uuid}': { ok: 200, through: MANAGERS },
  'POST /v2/devices/{uuid}/enable': { ok: 404, through: ADMIN },
  'POST /v2/devices/{uuid}/disable': { ok: 404, through: ADMIN },
  'GET /v2/deployables': { ok: 200, through: MANAGERS },
  'GET /v2/deployables/{uuid}': { ok: 200, through: MANAGERS },
  'PATCH /v2/deployables/{uuid}/program': { ok: 404, through: ADMIN },
  'GET /v2/attributes': { ok: 200, through: MANAGERS },
  'GET /v2/attributes/{uuid}': { ok: 200, through: MANAGERS },
  // A deployable_id that names no deployable is Cyborg's 400.
  'POST /v2/attributes': { ok: 400, through: ADMIN },
  'DELETE /v2/attributes/{uuid}': { ok: 404, through: ADMIN },
};

/**
 * The status the table expects of `who`. For an `open` route the status is whatever the route
 * answers (the page may be built or not), but the same with any identity or none: `got` must not
 * be 401 or 403 (the caller compares every persona's answer).
 */
export function expectedStatus(e: Expectation, who: Persona, got: number): number {
  if (e.ok === 'open') return got === 401 || got === 403 ? -1 : got;
  if (who === 'anonymous' || who === 'revoked' || who === 'expired') return 401;
  if (!e.through.includes(who)) return 403;
  if (e.hidden?.includes(who)) return 404;
  return e.ok;
}
