import { Type, type TLiteral, type TUnion } from '@sinclair/typebox';

/**
 * One string of `names` (a tuple: `ACCELERATOR_STATES`), as TypeBox's union of literals. Typed
 * from the tuple, element by element: `Type.Union(names.map(Type.Literal))` types an array of
 * literals, which the route type provider reads as `never`. The schema is the same.
 *
 * @example state: Literals(HOST_STATES) // 'online' | 'stale' | 'lost'
 */
export function Literals<const T extends readonly string[]>(names: T): TUnion<{ -readonly [K in keyof T]: TLiteral<T[K]> }> {
  return Type.Union(names.map((n) => Type.Literal(n))) as TUnion<{ -readonly [K in keyof T]: TLiteral<T[K]> }>;
}
