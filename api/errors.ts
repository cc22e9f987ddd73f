import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isCyborgError, TransitionInvalidError, type CyborgError } from '../errors/index.js';
import { describeValidation } from './bounds.js';

/** The body of every error on this project's own routes. */
export interface ErrorBody {
  code: string;
  message: string;
  [detail: string]: unknown;
}

/**
 * Maps errors to HTTP: typed CyborgErrors by their code, schema failures to 400, everything
 * else to 500 with a generic message (the log keeps the whole error). Routes that must speak
 * Cyborg's `{"error_message": ...}` format register their own handler in their own scope.
 */
export function installErrorHandler(app: FastifyInstance, unseen?: Unseen): void {
  app.setErrorHandler((thrown: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    const err = notYet(thrown, unseen);
    const { status, body } = toHttp(err);
    if (status >= 500) req.log.error({ err }, 'request failed');
    else req.log.info({ code: body.code, status }, body.message);
    if (status === 503) void reply.header('retry-after', String(retryAfter(err)));
    void reply.status(status).send(body);
  });
  app.setNotFoundHandler((req, reply) => {
    void reply.status(404).send({ code: 'route.not_found', message: `no route ${req.method} ${req.url}` });
  });
}

/** The control plane's `unseen`: why a miss in the api's view is not yet authoritative. */
export type Unseen = (id: string) => Error | undefined;

/**
 * A "not found" for an id the api's view may still lack (it is loading, or a conductor is taking
 * hosts over: control/view-complete.ts) is answered as that 503 + Retry-After instead, whichever
 * route looked it up (issue 39: Nova treats a 404 on a bind as a failed boot).
 */
export function notYet<E>(err: E, unseen: Unseen | undefined): E | Error {
  if (!unseen || !isCyborgError(err) || err.status !== 404) return err;
  const d = err.details;
  return unseen(String(d.uuid ?? d.id ?? d.name ?? d.rp ?? '')) ?? err;
}

/**
 * Seconds a client should wait before retrying a 503 (its `Retry-After`): what the error says
 * (`retryAfterS`, e.g. the journal's retry period while the database is away), else 1.
 */
export function retryAfter(err: unknown): number {
  const s = isCyborgError(err) ? err.details.retryAfterS : undefined;
  return typeof s === 'number' && Number.isFinite(s) && s > 0 ? Math.ceil(s) : 1;
}

/**
 * What a client is told for a typed error: the message for 4xx and the 502/503/504 a client can
 * act on, a generic text for other 5xx. Keystone's troubles name the condition only: their
 * messages carry Keystone's internal URL and this service's user, which the log keeps (with the
 * cause) and no caller — who may send any token string — should learn.
 */
export function publicMessage(err: CyborgError): string {
  if (err.code === 'keystone.unavailable') return 'Keystone is not answering, so the token could not be checked; retry later.';
  if (err.code === 'keystone.service_auth_failed')
    return 'This service cannot check tokens with Keystone now (Keystone refuses its own credentials); retry later.';
  const hidden = err.status >= 500 && err.status !== 503 && err.status !== 502 && err.status !== 504;
  return hidden ? 'internal error' : err.message;
}

export function toHttp(err: unknown): { status: number; body: ErrorBody } {
  if (err instanceof TransitionInvalidError) {
    return { status: 409, body: { code: err.code, message: err.message, state: err.state, allowed: err.allowed, ...err.details } };
  }
  if (isCyborgError(err)) {
    const details = err.code.startsWith('keystone.') ? {} : err.details;
    return { status: err.status, body: { code: err.code, message: publicMessage(err), ...details } };
  }
  const fe = err as Partial<FastifyError>;
  if (fe.validation) {
    const { field, message } = describeValidation(fe);
    return { status: 400, body: { code: 'request.invalid', message, field } };
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    // Fastify's own 4xx: malformed JSON, wrong content type, body too large.
    return { status: fe.statusCode, body: { code: 'request.invalid', message: fe.message ?? 'bad request' } };
  }
  return { status: 500, body: { code: 'internal', message: 'internal error' } };
}
