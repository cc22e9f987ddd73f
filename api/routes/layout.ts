import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorSchema } from './shared.js';
import { AcceleratorSchema, meta } from './accelerators.js';
import { RelayoutRequestSchema, type ControlPlane } from '../../model/index.js';
import { Name } from '../bounds.js';
import { policy } from '../auth/index.js';

/**
 * An operator re-lays out one card of a host: its MIG instances (`kind: mig`, the profiles in
 * order) or its SR-IOV VF count (`kind: vfs`). Refused with 409 naming the consumers while any of
 * the card's accelerators is attached or allocated in Placement; a layout the card cannot take is
 * the driver's 502 with its reason, the card unchanged.
 */
export const layoutRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane }> = async (app, { control }) => {
  app.post(
    '/hosts/:host/layout',
    {
      onRequest: policy('cyborg:operator:host:relayout'),
      schema: {
        tags: ['operator'],
        summary: 'Re-lay out a card: MIG instances or VF count (never below an allocation)',
        params: Type.Object({ host: Name() }),
        body: RelayoutRequestSchema,
        response: {
          200: Type.Object({ accelerators: Type.Array(AcceleratorSchema) }),
          400: ErrorSchema,
          404: ErrorSchema,
          409: ErrorSchema,
          502: ErrorSchema,
          503: ErrorSchema,
          504: ErrorSchema,
        },
      },
    },
    async (req) => ({ accelerators: await control.relayout(req.params.host, req.body, meta(req)) }),
  );
};
