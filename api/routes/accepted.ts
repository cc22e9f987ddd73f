import type { FastifyReply, FastifyRequest } from 'fastify';
import { isBusy } from '../../control/index.js';

/**
 * A write whose driver operation outlasted the api → conductor timeout and goes on comes back in
 * its `…ing` state: answered `202 Accepted` with the `Location` of what to poll (the accelerator or
 * the driver, whose state settles when the work does), never a 504 for work that goes on.
 * A view in a settled state is answered as it is (200).
 */
export function acceptedIfUnderWay<V extends { state: string; tags: readonly string[] }>(
  req: FastifyRequest,
  reply: FastifyReply,
  view: V,
  location: string,
): V {
  if (isBusy(view)) {
    void reply.code(202).header('location', location);
    req.log.info({ state: view.state, location }, 'operation goes on past the request timeout: 202 Accepted');
  }
  return view;
}

/** The resource a `POST …/<action>` acts on: its URL without the action (and without the query). */
export function resourceOf(req: FastifyRequest): string {
  return req.url.replace(/\?.*$/, '').replace(/\/[^/]+$/, '');
}
