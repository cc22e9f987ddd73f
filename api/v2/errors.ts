import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CyborgError, isCyborgError, TransitionInvalidError, type ErrorCode } from '../../errors/index.js';
import { describeValidation } from '../bounds.js';
import { notYet, publicMessage, retryAfter, type Unseen } from '../errors.js';
import { isUuid } from './format.js';

/**
 * Cyborg's error body: `{"error_message": "<JSON text of a WSME fault>"}`. Clients only read the
 * status and treat the text as opaque (tempest looks for "requires a service token" in it).
 */
export function errorBody(status: number, message: string): { error_message: string } {
  return { error_message: JSON.stringify({ faultcode: status >= 500 ? 'Server' : 'Client', faultstring: message, debuginfo: null }) };
}

/** Raises a v2 error with Cyborg's wording and this project's stable code. */
export function v2Error(code: ErrorCode, message: string, details: Record<string, unknown> = {}): CyborgError {
  return new CyborgError(code, message, details);
}

export const notFound = {
  arq: (uuid: string) => v2Error('arq.not_found', `ExtArq not found with uuid=${uuid}`, { uuid }),
  profile: (by: 'uuid' | 'name', value: string) => v2Error('device_profile.not_found', `Device Profile not found with ${by}=${value}`, { [by]: value }),
  device: (uuid: string) => v2Error('device.not_found', `Device not found with uuid=${uuid}`, { uuid }),
  deployable: (uuid: string) => v2Error('deployable.not_found', `Deployable not found with uuid=${uuid}`, { uuid }),
  attribute: (uuid: string) => v2Error('attribute.not_found', `Attribute not found with uuid=${uuid}`, { uuid }),
};

/** A path segment that must be a uuid (Cyborg's `types.uuid`: 400 otherwise). */
export function checkUuid(value: string): string {
  if (!isUuid(value)) throw v2Error('request.invalid', `Expected a uuid but received ${value}.`);
  return value;
}

/** At a microversion below what a feature needs (Cyborg's NotAcceptable wording). */
export function needsVersion(minimum: string): CyborgError {
  return v2Error('request.not_acceptable', `Request not acceptable. The minimal required API version should be ${minimum}`, { minimum });
}

/** A PATCH that Cyborg refuses with PatchError (400). */
export function patchError(reason: string): CyborgError {
  return v2Error('request.invalid', `Couldn't apply patch. Reason: ${reason}`);
}

/** Maps any error to Cyborg's status and body; never leaks internals on 5xx. */
export function toV2(err: unknown): { status: number; message: string } {
  if (err instanceof TransitionInvalidError) return { status: 409, message: err.message };
  if (isCyborgError(err)) return { status: err.status, message: publicMessage(err) };
  const fe = err as Partial<FastifyError> & { code?: string };
  if (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (err instanceof SyntaxError && fe.statusCode === 400)) {
    return { status: 400, message: 'Request is not in valid JSON format' };
  }
  if (fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return { status: 400, message: 'Request body is empty; expected JSON' };
  if (fe.validation) return { status: 400, message: `Invalid input: ${describeValidation(fe).message}` };
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, message: fe.message ?? 'bad request' };
  }
  return { status: 500, message: 'internal error' };
}

/**
 * JSON bodies the way Cyborg's WSGI stack takes them: an empty body (a DELETE or GET sent with a
 * JSON content type, as some clients do) is no body rather than an error.
 */
export function installLenientJson(scope: FastifyInstance): void {
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString();
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text) as unknown);
    } catch {
      // untyped: Fastify's own content-parser error shape (statusCode, FST code), which installV2ErrorHandler answers in Cyborg's words.
      done(Object.assign(new Error('Request is not in valid JSON format'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' }), undefined);
    }
  });
}

/**
 * Installs Cyborg's error format on one encapsulated scope (the v2 routes); this project's own
 * routes keep theirs. 423 (ARQs not yet resolved) has an empty body, as in Cyborg.
 */
export function installV2ErrorHandler(scope: FastifyInstance, opts: { notFound?: boolean; unseen?: Unseen | undefined } = {}): void {
  scope.setErrorHandler((thrown: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    const err = notYet(thrown, opts.unseen) as FastifyError;
    const { status, message } = toV2(err);
    if (status >= 500) req.log.error({ err }, 'v2 request failed');
    else req.log.info({ status, code: (err as { code?: string }).code }, message);
    if (status === 423) return reply.status(423).send();
    if (status === 503) void reply.header('retry-after', String(retryAfter(err)));
    return reply.status(status).type('application/json').send(errorBody(status, message));
  });
  if (opts.notFound) {
    scope.setNotFoundHandler((req, reply) => {
      void reply
        .status(404)
        .type('application/json')
        .send({ error_message: JSON.stringify({ code: 404, title: 'Not Found', description: `no route ${req.method} ${req.url}` }) });
    });
  }
}
