import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorSchema } from './shared.js';
import type { ControlPlane } from '../../model/index.js';
import { Name } from '../bounds.js';
import { policy } from '../auth/index.js';
import { NextLink, page, pageBody, PageQuery } from '../paging.js';
import { apiLimits } from '../limits.js';

export const HostSchema = Type.Object({
  name: Type.String(),
  state: Type.String({ description: 'agent liveness: online, stale, lost' }),
  agentId: Type.Union([Type.String(), Type.Null()]),
  epoch: Type.Integer(),
  drivers: Type.Array(Type.Object({ name: Type.String(), version: Type.String() })),
  accelerators: Type.Integer(),
  lastHeartbeatAt: Type.Union([Type.String(), Type.Null()]),
});

/** Compute hosts as their agents report them. */
export const hostRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane; pageMax?: number }> = async (app, { control, pageMax = apiLimits().pageMax }) => {
  app.get(
    '/hosts',
    {
      onRequest: policy('cyborg:operator:host:get'),
      schema: {
        tags: ['operator'],
        summary: 'List hosts and their agent liveness (paged: limit, marker = the last name)',
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: { 200: Type.Object({ hosts: Type.Array(HostSchema), next: NextLink }), 400: ErrorSchema },
      },
    },
    async (req) =>
      pageBody(
        'hosts',
        page(control.listHosts(), req.query, (h) => h.name, pageMax),
        req.url,
      ),
  );

  app.get(
    '/hosts/:name',
    {
      onRequest: policy('cyborg:operator:host:get'),
      schema: {
        tags: ['operator'],
        summary: 'One host',
        params: Type.Object({ name: Name() }),
        response: { 200: HostSchema, 404: ErrorSchema },
      },
    },
    async (req) => control.getHost(req.params.name),
  );
};
