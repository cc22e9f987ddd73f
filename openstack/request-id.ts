import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * OpenStack's global request id (oslo.middleware's `X-Openstack-Request-Id` on the way in,
 * keystoneauth's `global_request_id` on the way out): the id of the request a call to Placement,
 * Nova or Glance is made for travels with it, so that one boot can be followed across the
 * services' logs (each logs it beside its own request id).
 *
 * The id rides along the asynchronous work of that request (AsyncLocalStorage): the api enters it
 * for each request; the conductor enters the id a committed transition carries before it acts on
 * it (the Placement sync, Nova's notification), since those run after the request has ended.
 */
const current = new AsyncLocalStorage<string>();

const VALID = /^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Runs `fn` with `id` as the global request id of the calls it makes (a missing or malformed id: none). */
export function withGlobalRequestId<T>(id: string | undefined | null, fn: () => T): T {
  return id && VALID.test(id) ? current.run(id.toLowerCase(), fn) : fn();
}

/** The global request id of the work in progress, if it was made for a request. */
export function globalRequestId(): string | undefined {
  return current.getStore();
}

/** The header that carries it on a call to another OpenStack service (none outside a request). */
export function globalRequestIdHeader(): Record<string, string> {
  const id = current.getStore();
  return id ? { 'X-Openstack-Request-Id': id } : {};
}
