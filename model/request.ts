import { Type, type Static } from '@sinclair/typebox';

/** Who asked for a change, carried into the transition log (the API's request id and caller). */
export const RequestMetaSchema = Type.Object({
  requestId: Type.Optional(Type.String()),
  actor: Type.Optional(Type.String()),
});

export type RequestMeta = Static<typeof RequestMetaSchema>;
