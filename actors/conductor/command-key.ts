import { hash } from 'node:crypto';
import type { DriverOpInput } from '../../machines/index.js';

/**
 * The idempotency key of a driver command: accelerator, operation, the accelerator's operation
 * counter (persisted in its record) and a digest of the parameters. The same operation re-sent —
 * by a conductor that took the host over, say — carries the same key, so the agent answers with
 * the result it kept instead of running it twice; a new attempt (RETRY) counts up and runs anew.
 */
export function commandKey(input: DriverOpInput): string {
  const params = stableJson(input.params);
  // Most operations carry no parameters: their digest is computed once.
  const digest = params === '{}' ? EMPTY : hash('sha256', params, 'base64url').slice(0, 16);
  return `${input.id}:${input.op}:${input.seq ?? 0}:${digest}`;
}

const EMPTY = hash('sha256', '{}', 'base64url').slice(0, 16);

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}
