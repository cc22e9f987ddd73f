import { Type, type StringOptions, type TString } from '@sinclair/typebox';
import type { FastifyError } from 'fastify';

/**
 * The bounds every route's input is checked against before anything reaches PostgreSQL, so that
 * input the database would refuse (a 256-character name in a varchar(255), a NUL byte in text or
 * jsonb, an unpaired UTF-16 surrogate jsonb cannot store) is a 400 naming the field, never a 503
 * that tells the client to retry. The lengths follow the columns (db/migrations).
 */
export const MAX = {
  /** varchar(255): names, hostnames, project and user ids, keys. */
  name: 255,
  /** varchar(36): uuids. */
  uuid: 36,
  /** Free text kept in text / jsonb columns (descriptions, attribute values). */
  text: 1024,
  /** Comma-separated lists in a query string (`?name=a,b`, `?arqs=u1,u2`). */
  list: 16_384,
  /** Items of a list or keys of a map in a body. */
  items: 64,
} as const;

/**
 * No NUL and no unpaired surrogate. Ajv compiles patterns with the `u` flag, where a paired
 * surrogate is one code point outside the excluded range and a lone one is inside it.
 */
export const TEXT_PATTERN = '^[^\\u0000\\uD800-\\uDFFF]*$';
const TEXT_RE = new RegExp(TEXT_PATTERN, 'u');

/** A string PostgreSQL stores as given, at most `max` characters: the one string schema of every route. */
export function Text(max: number, opts: StringOptions = {}): TString {
  return Type.String({ maxLength: max, pattern: TEXT_PATTERN, ...opts });
}

/** A name column (varchar(255)), at least one character. */
export const Name = (opts: StringOptions = {}): TString => Text(MAX.name, { minLength: 1, ...opts });

/** For values checked outside a schema (patch values, headers): the same rule as TEXT_PATTERN. */
export function isStorable(s: string, max: number): boolean {
  return s.length <= max && TEXT_RE.test(s);
}

const IDENTITY_HEADERS: [header: string, max: number][] = [
  ['x-project-id', MAX.name],
  ['x-tenant-id', MAX.name],
  // Recorded as the transition log's actor (varchar(255)); the bound keeps room for a prefix
  // (`api:` once), as clients have been told.
  ['x-user-id', MAX.name - 'api:'.length],
];

/**
 * The noauth identity headers end up in varchar(255) columns (an ARQ's project_id, the actor of
 * each transition): the first one that would not fit, as a message naming it, or undefined.
 */
export function identityHeaderProblem(headers: Record<string, string | string[] | undefined>): string | undefined {
  for (const [name, max] of IDENTITY_HEADERS) {
    const v = headers[name];
    const s = Array.isArray(v) ? v.join(',') : v;
    if (s !== undefined && !isStorable(s, max)) return `header ${name} must be at most ${max} characters`;
  }
  return undefined;
}

type AjvError = { instancePath?: string; keyword?: string; params?: Record<string, unknown>; message?: string; propertyName?: string };

/**
 * A schema failure as a person reads it, naming the field (`body/0/name`, `querystring/limit`):
 * Fastify's own text says "must match pattern" with the raw expression for the character rule.
 */
export function describeValidation(err: Partial<FastifyError> & { validation?: AjvError[]; validationContext?: string }): { field: string; message: string } {
  const first = err.validation?.[0];
  if (!first) return { field: err.validationContext ?? 'request', message: err.message ?? 'request does not match the schema' };
  const p = first.params ?? {};
  const named = [p.missingProperty, p.additionalProperty].find((x) => typeof x === 'string');
  // A map key that breaks `propertyNames` is named by its (possibly long) text: shown shortened.
  const propertyName = first.propertyName ?? p.propertyName;
  const key = typeof propertyName === 'string' ? ` key "${JSON.stringify(propertyName).slice(1, -1).slice(0, 40)}"` : '';
  const child = named === undefined ? '' : `/${String(named)}`;
  const field = `${err.validationContext ?? 'request'}${first.instancePath ?? ''}${child}${key}`;
  const what =
    first.keyword === 'pattern' && p.pattern === TEXT_PATTERN
      ? 'must not contain NUL characters or unpaired UTF-16 surrogates'
      : first.keyword === 'additionalProperties'
        ? 'is not a known field'
        : first.keyword === 'required'
          ? 'is required'
          : first.keyword === 'enum' && Array.isArray(p.allowedValues)
            ? `must be one of: ${p.allowedValues.map(String).join(', ')}`
            : (first.message ?? 'is invalid');
  return { field, message: `${field} ${what}` };
}
