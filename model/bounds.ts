import { Type, type StringOptions, type TString } from '@sinclair/typebox';

/**
 * Strings every process can hand to PostgreSQL as they are, for schemas shared by the bus and the
 * model: text and jsonb cannot hold NUL (U+0000) nor an unpaired UTF-16 surrogate (it has no UTF-8
 * form), and a varchar(n) refuses more than n characters. A message that breaks them is refused on
 * receipt, so that it never reaches a journal batch (db/bounds.ts is the last line behind this).
 * The lengths follow the columns (db/migrations).
 */
export const BOUND = {
  /** varchar(255): names, hosts, ids, versions. */
  name: 255,
  /** varchar(36): uuids. */
  uuid: 36,
  /** Free text kept in text / jsonb (reasons, attribute values, board info). */
  text: 4096,
} as const;

/**
 * No NUL and no unpaired surrogate, read the same with or without the regular expression's `u`
 * flag (TypeBox compiles patterns without it, Ajv with it): without `u` a pair is matched by the
 * second branch; with `u` it is one code point above the excluded range, matched by the first.
 */
export const STORABLE_PATTERN = '^(?:[^\\u0000\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$';

/** A string PostgreSQL stores as given, at most `max` characters. */
export function BoundedText(max: number, opts: StringOptions = {}): TString {
  return Type.String({ maxLength: max, pattern: STORABLE_PATTERN, ...opts });
}

/** A name column (varchar(255)). */
export const BoundedName = (opts: StringOptions = {}): TString => BoundedText(BOUND.name, opts);

/** A uuid column (varchar(36)); its format is not checked (drivers make their own ids). */
export const BoundedUuid = (opts: StringOptions = {}): TString => BoundedText(BOUND.uuid, opts);
