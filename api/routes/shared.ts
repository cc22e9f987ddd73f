import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';

export const ErrorSchema = Type.Object(
  {
    code: Type.String(),
    message: Type.String(),
  },
  { additionalProperties: true },
);

export const Uuid = Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' });

/**
 * `curl -XPOST .../maintenance` sends no body, as docs/cli.md shows it: a route with a body schema
 * sees `{}` instead, so the schema still refuses junk (and names a required field) while an action
 * that takes nothing never answers "body must be object". Installed once on the operator scope.
 */
export function absentBodyAsEmpty(app: FastifyInstance): void {
  app.addHook('preValidation', async (req) => {
    if ((req.body === undefined || req.body === null) && req.routeOptions.schema?.body !== undefined) req.body = {};
  });
}
