/**
 * The error catalogue: every error this project raises on purpose has a stable string code.
 * Codes are part of the API contract — never change or reuse one. The HTTP status each code
 * maps to lives here too, so the API's error handler and the docs read from one place.
 */
export const ErrorCodes = {
  'accelerator.not_found': 404,
  'accelerator.transition_invalid': 409,
  'accelerator.no_free_handle': 409,
  // Placement holds an allocation on the accelerator's provider (a consumer Cyborg may not know): never pulled from under it.
  'accelerator.allocated': 409,
  'host.not_found': 404,
  'arq.not_found': 404,
  'arq.transition_invalid': 409,
  'driver.not_found': 404,
  // No answer by its deadline (an agent gone, a driver hung): not done, try again — 503 + Retry-After, never a bare 504.
  'driver.timeout': 503,
  'driver.failed': 502,
  // A bus call unanswered by its deadline (NATS away, a partition, a conductor gone): 503 + Retry-After.
  'bus.timeout': 503,
  'bus.no_responder': 503,
  'bus.invalid_message': 400,
  // A message larger than the NATS server's max_payload: refused before it is sent, never dropped silently.
  'bus.payload_too_large': 502,
  // A reply this process cannot read: out of its schema, or an error code it does not know (a peer of another version).
  'bus.bad_reply': 502,
  // A message or reply written in a protocol this release does not read (garbled, from a newer
  // release, or two releases behind): refused, never read under a guess (release/, docs/upgrade.md).
  'bus.protocol_unsupported': 502,
  'request.invalid': 400,
  // A write whose conductor did not answer within the api's wait, while its commit may be on the
  // wire: it may or may not have been made — read it back before sending it again. Never a 503,
  // which says "not made".
  'request.outcome_unknown': 504,
  // Limits on what one client may cost the api (config `api`): answered with Retry-After.
  'request.rate_limited': 429,
  'events.too_many_clients': 503,
  'persistence.unavailable': 503,
  // A change PostgreSQL could never store (NUL, a lone surrogate, longer than its column):
  // refused before it is queued, so it cannot poison the batch it would have joined.
  'persistence.invalid_value': 400,
  // The database refused one commit's rows (SQLSTATE classes 22, 23, 54): that commit alone fails.
  'persistence.refused': 422,
  // The database failed one commit for another reason than its reachability or its data (a bug).
  'persistence.failed': 500,
  // The caller's deadline (the time its api waits, carried with the call) passed before the
  // database took the change: dropped, never written later — a 503 that is true.
  'persistence.deadline_passed': 503,
  'service.shutting_down': 503,
  // Distributed roles: a conductor whose host lease lapsed or moved must not write.
  'lease.lost': 503,
  'lease.not_owner': 409,
  // Placement sync (openstack/placement): Placement's own code rides along as `placementCode`.
  'placement.unavailable': 503,
  'placement.request_failed': 502,
  // Cyborg v2 API (api/v2): the statuses Cyborg gives for these cases.
  'device_profile.not_found': 404,
  'device_profile.conflict': 409,
  'device_profile.in_use': 409,
  'device.not_found': 404,
  'deployable.not_found': 404,
  'attribute.not_found': 404,
  'attribute.discovered': 409,
  'arq.bad_state': 409,
  'arq.unresolved': 423,
  'request.unauthorized': 401,
  'request.forbidden': 403,
  'request.not_acceptable': 406,
  // Keystone (openstack/keystone): it cannot be reached, or it refuses this service's own credentials.
  'keystone.unavailable': 503,
  'keystone.service_auth_failed': 503,
  /** Signing in through the api (api/routes/auth.ts) where the api authenticates nobody (noauth). */
  'auth.not_required': 404,
  // Driver lifecycle and instance attach (generic-driver spec; actors/services/driver-admin.ts).
  'driver.ambiguous': 400,
  'driver.in_use': 409,
  'driver.busy': 409,
  'driver.not_installed': 409,
  'driver.already_installed': 409,
  'host.offline': 503,
  'accelerator.none_available': 409,
  /** A maintenance or drain cancel where there is no such mark (a cancel twice). */
  'maintenance.not_marked': 409,
  /** A fake fault (api/routes/fake-faults.ts) aimed at a device of a real driver. */
  'fault.not_fake_driver': 400,
  /** update-driver on a host that is not drained, without --force. */
  'host.not_drained': 409,
  /** host delete (actors/conductor/host-retire.ts) on a host whose agent is not lost, or that still holds instances. */
  'host.in_service': 409,
  /** A bind the accelerator cannot take (drained, marked, quarantined, a handle held, the attach or programming failed): Nova's BindFailed carries the reason. */
  'arq.bind_failed': 409,
  /** Settings that cannot work together, found where they are used (a Keystone auth type without its credentials, a NIC mapping that does not parse). */
  'config.invalid': 500,
  /** A service's Keystone catalog has no endpoint of the type, interface and region asked for. */
  'keystone.no_endpoint': 503,
  /** A programming error: a contract of our own broken (an effect not provided, a hook not installed); the log has the stack. */
  'internal.error': 500,
} as const;

export type ErrorCode = keyof typeof ErrorCodes;

/** Base of every typed error: a stable `code`, the ids it is about, and an optional `cause`. */
export class CyborgError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CyborgError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ErrorCodes[this.code];
  }
}

export class NotFoundError extends CyborgError {
  constructor(code: 'accelerator.not_found' | 'host.not_found' | 'arq.not_found' | 'driver.not_found', id: string) {
    super(code, `${code.split('.')[0]} ${id} not found`, { id });
    this.name = 'NotFoundError';
  }
}

/**
 * A transition its machine does not allow now. Carries the current state and the events that
 * are allowed, so a client can tell what to do next (HTTP 409).
 */
export class TransitionInvalidError extends CyborgError {
  readonly state: string;
  readonly allowed: string[];

  /** `why`: the cause and the way out (model/refusal.ts), said between the refusal and what is allowed. */
  constructor(kind: 'accelerator' | 'arq', id: string, event: string, state: string, allowed: string[], why?: string) {
    super(
      kind === 'arq' ? 'arq.transition_invalid' : 'accelerator.transition_invalid',
      `${kind} ${id} is ${state}: ${event} is not allowed now${why ? ` — ${why}` : ''} (allowed: ${allowed.join(', ') || 'none'})`,
      { id, event, state, allowed, ...(why ? { why } : {}) },
    );
    this.name = 'TransitionInvalidError';
    this.state = state;
    this.allowed = allowed;
  }
}

export class DriverError extends CyborgError {
  constructor(
    code: 'driver.timeout' | 'driver.failed' | 'driver.busy' | 'driver.in_use',
    message: string,
    details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, details, options);
    this.name = 'DriverError';
  }
}

export class BusError extends CyborgError {
  constructor(
    code: 'bus.timeout' | 'bus.no_responder' | 'bus.invalid_message' | 'bus.protocol_unsupported',
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super(code, message, details);
    this.name = 'BusError';
  }
}

export function isCyborgError(err: unknown): err is CyborgError {
  return err instanceof CyborgError;
}
