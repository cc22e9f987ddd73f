import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorSchema } from './shared.js';
import type { ControlPlane } from '../../model/index.js';
import { Name } from '../bounds.js';
import { policy } from '../auth/index.js';

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
export const hostRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane }> = async (app, { control }) => {
  app.get('/hosts', {
    onRequest: policy('cyborg:operator:host:get'),
    schema: { tags: ['operator'], summary: 'List hosts and their agent liveness', response: { 200: Type.Object({ hosts: Type.Array(HostSchema) }) } },
  }, async () => ({ hosts: control.listHosts() }));

  app.get('/hosts/:name', {
    onRequest: policy('cyborg:operator:host:get'),
    schema: {
      tags: ['operator'], summary: 'One host',
      params: Type.Object({ name: Name() }),
      response: { 200: HostSchema, 404: ErrorSchema },
    },
  }, async (req) => control.getHost(req.params.name));
};
