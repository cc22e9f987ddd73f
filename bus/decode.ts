import type { Static, TSchema } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { BusError, publicMessage, CyborgError } from '../errors/index.js';
import { firstError } from './schemas.js';

/**
 * Parses and validates one received message against its schema. A message that is not JSON or
 * does not match is logged with its subject and dropped (undefined): what every Bus does on receipt.
 */
export function decodeMessage(
  schema: TSchema,
  parse: () => unknown,
  subject: string,
  log: Logger,
  onDrop?: (reason: 'not_json' | 'invalid', subject: string) => void,
): unknown {
  let msg: unknown;
  try {
    msg = parse();
  } catch {
    onDrop?.('not_json', subject);
    log.warn({ subject }, 'dropped a message that is not JSON');
    return undefined;
  }
  const err = firstError(schema, msg);
  if (err) {
    onDrop?.('invalid', subject);
    log.warn({ subject, error: err }, 'dropped a message that does not match its schema');
    return undefined;
  }
  return msg;
}

/** Marks a reply that carries a responder's failure instead of an answer. */
export const ERROR_KEY = '__busError';

export function errorReply(code: 'bus.invalid_message' | 'bus.no_responder' | 'bus.protocol_unsupported', message: string): Record<string, unknown> {
  return { [ERROR_KEY]: { code, message } };
}

/**
 * What a responder sends back: the handler's answer, checked against the reply schema, or an
 * error reply when the handler throws or answers out of schema (`onFail` logs and counts it).
 */
export async function answer<Rep extends TSchema>(run: () => Promise<unknown> | unknown, repSchema: Rep, onFail: (err: unknown) => void): Promise<unknown> {
  try {
    const out = await run();
    const err = firstError(repSchema, out);
    if (err) throw new CyborgError('bus.bad_reply', `handler produced an invalid reply: ${err}`);
    return out;
  } catch (e) {
    onFail(e);
    // The requester reads our wording, never the database's (onFail logged the whole error).
    return errorReply('bus.no_responder', publicMessage(e));
  }
}

/**
 * Reads a parsed reply: an error reply becomes a BusError, a reply out of schema too (`onBad`
 * counts it); otherwise the reply itself.
 */
export function readReply<Rep extends TSchema>(parsed: unknown, repSchema: Rep, subject: string, onBad?: () => void): Static<Rep> {
  if (parsed && typeof parsed === 'object' && ERROR_KEY in parsed) {
    const e = (parsed as Record<string, { code?: string; message?: string }>)[ERROR_KEY]!;
    const code = e.code === 'bus.invalid_message' || e.code === 'bus.protocol_unsupported' ? e.code : 'bus.no_responder';
    throw new BusError(code, e.message ?? 'responder failed', { subject });
  }
  const err = firstError(repSchema, parsed);
  if (err) {
    onBad?.();
    throw new BusError('bus.invalid_message', `invalid reply on ${subject}: ${err}`, { subject });
  }
  return parsed as Static<Rep>;
}
