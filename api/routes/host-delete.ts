import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { RequestMeta } from '../../model/index.js';
import { policy } from '../auth/index.js';
import { Name } from '../bounds.js';
import { meta } from './accelerators.js';
import { ErrorSchema } from './shared.js';

/** Retires a host (actors/conductor/host-retire.ts), where this process holds the conductor. */
export interface HostRetirer {
  retire(name: string, meta: RequestMeta): Promise<{ host: string; accelerators: string[] }>;
}

/**
 * `DELETE /cyborg/v1/hosts/{name}`: a host gone for good leaves the API, the metrics, the page
 * and Placement. Only a lost host that holds no instance (409 `host.in_service` naming why);
 * audited as the host's `DELETE` row and each accelerator's removal.
 */
export const hostDeleteRoutes: FastifyPluginAsyncTypebox<{ retirer: HostRetirer }> = async (app, { retirer }) => {
  app.delete(
    '/hosts/:name',
    {
      onRequest: policy('cyborg:operator:host:delete'),
      schema: {
        tags: ['operator'],
        summary: 'Delete a lost host that holds no instance: its accelerators removed (and their Placement providers), its records forgotten',
        params: Type.Object({ name: Name() }),
        response: { 200: Type.Object({ host: Type.String(), accelerators: Type.Array(Type.String()) }), 404: ErrorSchema, 409: ErrorSchema, 503: ErrorSchema },
      },
    },
    async (req) => retirer.retire(req.params.name, meta(req)),
  );
};
