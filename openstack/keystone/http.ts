import type { Dispatcher } from 'undici';
import { KeystoneUnavailableError } from './types.js';

export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

export interface HttpOptions {
  method: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
}

let loaded: Promise<typeof import('undici')> | undefined;

/**
 * undici, imported at the first call to a service rather than with this module: a process that
 * never calls one (the all-in-one in noauth mode without Placement or Glance) never holds its
 * code, ~7 MiB (issue 43: an all-in-one in 256 MB).
 */
export function undici(): Promise<typeof import('undici')> {
  return (loaded ??= import('undici'));
}

/** A dispatcher made at its first request, so that building a client loads nothing (see `undici`). */
export type LazyDispatcher = () => Promise<Dispatcher>;

/**
 * The dispatcher for calls to OpenStack services: undici's RetryAgent retries connection
 * failures and 502/503/504 with backoff (a restarting uWSGI, a proxy in between); 500 is not
 * retried (a real error). Keystone's own POST /auth/tokens is safe to repeat, so POST is included.
 */
export function openstackDispatcher(o: { retries?: number; connectTimeoutMs?: number } = {}): LazyDispatcher {
  let made: Promise<Dispatcher> | undefined;
  return () =>
    (made ??= undici().then(
      ({ Agent, RetryAgent }) =>
        new RetryAgent(new Agent({ connectTimeout: o.connectTimeoutMs ?? 3_000, keepAliveTimeout: 4_000 }), {
          maxRetries: o.retries ?? 2,
          minTimeout: 100,
          maxTimeout: 1_000,
          timeoutFactor: 2,
          methods: ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'POST'],
          statusCodes: [502, 503, 504],
          errorCodes: ['ECONNRESET', 'ECONNREFUSED', 'ENOTFOUND', 'ENETDOWN', 'ENETUNREACH', 'EHOSTDOWN', 'EHOSTUNREACH', 'EPIPE', 'UND_ERR_SOCKET'],
        }),
    ));
}

/** One HTTP exchange; no answer at all (refused, timed out after the retries) is KeystoneUnavailableError-like via `onNoAnswer`. */
export async function send(dispatcher: LazyDispatcher, url: string, o: HttpOptions, what = 'request'): Promise<HttpAnswer> {
  const [{ request }, d] = await Promise.all([undici(), dispatcher()]);
  let res: Dispatcher.ResponseData;
  try {
    res = await request(url, {
      dispatcher: d,
      method: o.method as Dispatcher.HttpMethod,
      headers: o.headers,
      body: o.body,
      signal: AbortSignal.timeout(o.timeoutMs),
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
    });
  } catch (err) {
    throw new NoAnswerError(`${what} ${o.method} ${url}: ${reason(err, o.timeoutMs)}`, { cause: err });
  }
  let text: string;
  try {
    text = await res.body.text();
  } catch (err) {
    throw new NoAnswerError(`${what} ${o.method} ${url}: the answer broke off: ${reason(err, o.timeoutMs)}`, { cause: err });
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return { status: res.statusCode, headers, text };
}

/** No HTTP answer came back (connection refused, reset, timed out). */
export class NoAnswerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NoAnswerError';
  }
}

function reason(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return `no answer within ${timeoutMs} ms`;
  const e = err as { code?: string; cause?: { code?: string }; message?: string };
  return e.code ?? e.cause?.code ?? e.message ?? String(err);
}

/** Keystone itself is the one not answering. */
export function keystoneDown(err: NoAnswerError): KeystoneUnavailableError {
  return new KeystoneUnavailableError(`Keystone is unreachable: ${err.message}`, { cause: err });
}

/**
 * `work` within `ms` end to end, whatever it does inside (the service user's authentication, a
 * retry after a 401, the dispatcher's retries): past it the caller gets `late(ms)` (a 503 with
 * Retry-After, as no answer is), at most `ms` after it asked, and the late answer is dropped. Each
 * call's own timeout bounds one exchange only, so a chain of them could add up to minutes.
 */
export async function within<T>(ms: number, work: () => Promise<T>, late: (ms: number) => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late(ms)), ms);
  });
  const p = work();
  p.catch(() => undefined); // a failure after the deadline has no one to tell
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
