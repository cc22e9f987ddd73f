import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** Cyborg's reference material beside the checkout (`../shared/reference`), when present. */
export const REFERENCE = resolve(import.meta.dirname, '../../../shared/reference');
export const haveReference = existsSync(resolve(REFERENCE, 'observed/index.json'));

/** The body a real Cyborg answered with, from `observed/<file>`. */
export function observedBody<T = Record<string, unknown>>(file: string): T {
  const rec = JSON.parse(readFileSync(resolve(REFERENCE, 'observed', file), 'utf8')) as { response: { body_json: T } };
  return rec.response.body_json;
}

/** A JSON sample from Cyborg's `doc/api_samples`. */
export function sample<T = Record<string, unknown>>(path: string): T {
  return JSON.parse(readFileSync(resolve(REFERENCE, 'samples', path), 'utf8')) as T;
}

/** Sorted keys: what the contract compares (values differ between deployments). */
export function keys(o: object): string[] {
  return Object.keys(o).sort();
}
