import { Type } from '@sinclair/typebox';
import { MAX, Name, Text } from '../bounds.js';

/** Shared v2 schemas: they drive validation, fast serialization and the OpenAPI document. */
export const V2Error = Type.Object({ error_message: Type.String({ description: 'JSON text of a WSME fault: {"faultcode", "faultstring", "debuginfo"}' }) });

export const Links = Type.Array(Type.Object({ href: Type.String(), rel: Type.String() }));

export const Timestamp = Type.String({ description: 'ISO-8601 with offset, e.g. 2020-03-13T02:26:31+00:00' });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

export const UuidParam = Text(MAX.uuid, { minLength: 1, description: 'a uuid' });
/** A device profile's uuid, or (at 2.2) its name. */
export const ProfileParam = Name({ description: 'a uuid, or a device profile name at 2.2' });
/** Cyborg's `filters` query parameter: accepted and ignored. */
export const IgnoredFilters = Type.Optional(
  Type.Union([Text(MAX.list), Type.Array(Text(MAX.list), { maxItems: MAX.items })], { description: 'WSME filter list; accepted and ignored, as in Cyborg' }),
);

/** The error statuses a v2 route can answer with, all in Cyborg's body. */
export function errors(...statuses: number[]): Record<number, typeof V2Error> {
  return Object.fromEntries(statuses.map((s) => [s, V2Error]));
}

export const TAG = 'cyborg v2';
