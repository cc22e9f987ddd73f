import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { withGlobalRequestId } from '../../openstack/request-id.js';

const VALID = /^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a client-sent `X-Openstack-Request-Id` is one OpenStack would keep (`req-` + a uuid). */
export function isRequestId(v: unknown): v is string {
  return typeof v === 'string' && VALID.test(v);
}

/**
 * Fastify's genReqId: the client's `X-Openstack-Request-Id` when it is a valid one (so a Nova
 * request id follows the call into our logs), else a new `req-<uuid>`, as oslo.middleware's
 * request_id does. Fastify logs every line of the request with it (`reqId`).
 */
export function requestId(req: IncomingMessage | FastifyRequest['raw']): string {
  const sent = req.headers['x-openstack-request-id'];
  return isRequestId(sent) ? sent.toLowerCase() : `req-${randomUUID()}`;
}

/**
 * Every response carries its request id, as OpenStack services answer it; and every call to
 * Placement, Nova or Glance made while answering carries it as the global request id
 * (openstack/request-id.ts): the rest of the request runs inside `done`.
 */
export function installRequestIds(app: FastifyInstance): void {
  app.addHook('onRequest', (req, reply, done) => {
    void reply.header('x-openstack-request-id', req.id);
    withGlobalRequestId(req.id, done);
  });
}
