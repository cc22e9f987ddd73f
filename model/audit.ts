import { Type, type Static } from '@sinclair/typebox';
import { TransitionRecordSchema } from './events.js';

/**
 * A question to the audit log: every filter optional, newest first, `limit` rows at most after
 * `cursor` (the previous page's `next`, opaque to the client). Times are ISO 8601; `since` is
 * inclusive, `until` exclusive.
 */
export const AuditQuerySchema = Type.Object({
  host: Type.Optional(Type.String({ minLength: 1 })),
  /** The accelerator (or ARQ, host, driver) the row belongs to. */
  id: Type.Optional(Type.String({ minLength: 1 })),
  kind: Type.Optional(Type.String({ minLength: 1 })),
  /** Who asked: a user id or name, `agent:<id>`, `conductor`. */
  actor: Type.Optional(Type.String({ minLength: 1 })),
  /** The user ids Keystone gives for `actor` taken as a name: rows that kept only the id match too. */
  actorIds: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  /** The caller's project: an id or a name. */
  projectId: Type.Optional(Type.String({ minLength: 1 })),
  /** The project ids Keystone gives for `projectId` taken as a name. */
  projectIds: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  /** The event, case-insensitive (`enable`, `program`, `timer: stale`). */
  event: Type.Optional(Type.String({ minLength: 1 })),
  since: Type.Optional(Type.String({ minLength: 1 })),
  until: Type.Optional(Type.String({ minLength: 1 })),
  limit: Type.Integer({ minimum: 1 }),
  cursor: Type.Optional(Type.String({ minLength: 1 })),
});

/** One row of the log, numbered by the database (`seq`, stable). */
export const AuditEntrySchema = Type.Composite([Type.Object({ seq: Type.Integer() }), TransitionRecordSchema]);

export const AuditPageSchema = Type.Object({
  entries: Type.Array(AuditEntrySchema),
  /** Where the next (older) page starts; absent on the last page. */
  next: Type.Optional(Type.String()),
});

export type AuditQuery = Static<typeof AuditQuerySchema>;
export type AuditEntry = Static<typeof AuditEntrySchema>;
export type AuditPage = Static<typeof AuditPageSchema>;

/** A page's position: the last row's time and seq, as an opaque string. */
export function encodeCursor(at: string, seq: number): string {
  return Buffer.from(JSON.stringify([at, seq])).toString('base64url');
}

/** The position a cursor names, or undefined when it is not one this service made. */
export function decodeCursor(cursor: string): { at: string; seq: number } | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (!Array.isArray(v) || v.length !== 2) return undefined;
    const [at, seq] = v as [unknown, unknown];
    if (typeof at !== 'string' || !Number.isFinite(Date.parse(at)) || typeof seq !== 'number' || !Number.isSafeInteger(seq)) return undefined;
    return { at, seq };
  } catch {
    return undefined;
  }
}
