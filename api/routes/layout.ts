import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorSchema } from './shared.js';
import { AcceleratorSchema, meta } from './accelerators.js';
import { RelayoutRequestSchema, type ControlPlane, type RelayoutRequest } from '../../model/index.js';
import { Name } from '../bounds.js';
import { policy } from '../auth/index.js';

const KINDS = RelayoutRequestSchema.anyOf.map((member) => member.properties.kind.const);

/**
 * The model's union, checked by its `kind` first: the body is held to the one member its kind
 * names. Checked as a plain union, a failure was reported from the last member tried, so a bad
 * VF count read "body/profiles is required" and an unknown kind "body/address is required".
 */
const RelayoutBody = Type.Unsafe<RelayoutRequest>({
  type: 'object',
  required: ['kind'],
  properties: { kind: { type: 'string', enum: KINDS } },
  allOf: RelayoutRequestSchema.anyOf.map((member) => ({ if: { properties: { kind: { const: member.properties.kind.const } } }, then: member })),
});

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
        body: RelayoutBody,
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
    // The route's type provider (typebox 1.x) does not read this TypeBox 0.34 Unsafe: the schema has checked it.
    async (req) => ({ accelerators: await control.relayout(req.params.host, req.body as RelayoutRequest, meta(req)) }),
  );
};
