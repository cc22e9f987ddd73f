import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorSchema } from './shared.js';
import { AuditEntrySchema, decodeCursor, type AuditQuery, type ControlPlane } from '../../model/index.js';
import { MAX, Text } from '../bounds.js';
import { policy } from '../auth/index.js';
import { scopeOf } from '../scope.js';
import { withKeystoneIds, withPeopleNames } from '../names.js';
import { NextLink, nextHref } from '../paging.js';
import { apiLimits } from '../limits.js';
import { CyborgError } from '../../errors/index.js';

const Time = Text(64, { minLength: 1, description: 'ISO 8601 time, e.g. 2026-11-23T10:00:00Z' });

const Query = Type.Object(
  {
    host: Type.Optional(Text(MAX.name, { minLength: 1 })),
    accelerator: Type.Optional(Text(MAX.name, { minLength: 1, description: 'an accelerator (or ARQ, host, driver) id' })),
    kind: Type.Optional(Type.Union([Type.Literal('accelerator'), Type.Literal('arq'), Type.Literal('host'), Type.Literal('driver')])),
    user: Type.Optional(Text(MAX.name, { minLength: 1, description: 'who asked: a user id or name, `agent:<id>` or `conductor`' })),
    project: Type.Optional(Text(MAX.name, { minLength: 1, description: "the caller's project: an id or a name" })),
    action: Type.Optional(Text(MAX.name, { minLength: 1, description: 'the event, case-insensitive: enable, program, install, timer: stale, …' })),
    since: Type.Optional(Time),
    until: Type.Optional(Time),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'most rows in this page (at most the configured api.pageMax)' }),
    ),
    marker: Type.Optional(Text(512, { minLength: 1, description: "the opaque cursor of the previous page's `next`" })),
  },
  { additionalProperties: false },
);

/**
 * The fleet's audit log: every transition and operator or driver action, with who asked, from →
 * to, why and the request id; newest first, in cursor pages (`next` while more follow), answered
 * from the database by a conductor. `since` is inclusive, `until` exclusive. A caller without the
 * fleet scope reads only the rows of its own project's callers.
 */
export const auditRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane; pageMax?: number }> = async (app, { control, pageMax = apiLimits().pageMax }) => {
  app.get(
    '/audit',
    {
      onRequest: policy('cyborg:operator:audit:get_all'),
      schema: {
        tags: ['operator'],
        summary: 'The audit log, filtered by host, accelerator, user, project, action and time range (newest first, paged: limit, marker = the previous next)',
        querystring: Query,
        response: { 200: Type.Object({ audit: Type.Array(AuditEntrySchema), next: NextLink }), 400: ErrorSchema, 503: ErrorSchema },
      },
    },
    async (req) => {
      const q = req.query;
      for (const field of ['since', 'until'] as const) {
        const v = q[field];
        if (v !== undefined && !Number.isFinite(Date.parse(v)))
          throw new CyborgError('request.invalid', `${field} ${JSON.stringify(v)} is not a time (ISO 8601, e.g. 2026-11-23T10:00:00Z)`, {
            field: `querystring/${field}`,
          });
      }
      // Checked here, where the parameter is `marker`: the journal knows it as the query's cursor.
      if (q.marker !== undefined && !decodeCursor(q.marker))
        throw new CyborgError('request.invalid', "marker is not one this service gave (the previous page's next): start again without it", {
          field: 'querystring/marker',
        });
      const query: AuditQuery = { limit: Math.min(q.limit ?? pageMax, pageMax) };
      if (q.host !== undefined) query.host = q.host;
      if (q.accelerator !== undefined) query.id = q.accelerator;
      if (q.kind !== undefined) query.kind = q.kind;
      if (q.user !== undefined) query.actor = q.user;
      if (q.action !== undefined) query.event = q.action;
      if (q.since !== undefined) query.since = q.since;
      if (q.until !== undefined) query.until = q.until;
      if (q.marker !== undefined) query.cursor = q.marker;
      // A project-scoped caller reads its own project's rows only (api/scope.ts).
      const scope = scopeOf(req);
      const scoped = scope.audit(query, q.project);
      if (!scoped) return { audit: [] };
      // A user or project typed by name finds the rows that kept only its id too (keystone mode).
      const page = await control.audit(await withKeystoneIds(req, scoped, scope.fleet));
      const audit = await withPeopleNames(req, page.entries);
      return page.next === undefined ? { audit } : { audit, next: nextHref(req.url, page.next) };
    },
  );
};
