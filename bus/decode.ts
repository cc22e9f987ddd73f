import type { TSchema } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { firstError } from './schemas.js';

/**
 * Parses and validates one received message against its schema. A message that is not JSON or
 * does not match is logged with its subject and dropped (undefined): what every Bus does on receipt.
 */
export function decodeMessage(
  schema: TSchema, parse: () => unknown, subject: string, log: Logger,
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
