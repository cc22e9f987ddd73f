import { Type, type Static } from '@sinclair/typebox';

/**
 * Who asked for a change, carried into the transition log: the API's request id and the caller
 * as the identity told it (Keystone's user and project ids; noauth's `X-User-Id`), or
 * `agent:<host>` / `conductor` for what the system does by itself.
 */
export const RequestMetaSchema = Type.Object({
  requestId: Type.Optional(Type.String()),
  actor: Type.Optional(Type.String()),
  projectId: Type.Optional(Type.String()),
  /** The user's and project's names as Keystone's token answer gave them, kept beside the ids for people reading the audit. */
  actorName: Type.Optional(Type.String()),
  projectName: Type.Optional(Type.String()),
});

export type RequestMeta = Static<typeof RequestMetaSchema>;
