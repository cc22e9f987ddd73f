import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AcceleratorSchema, meta } from './accelerators.js';
import { ErrorSchema, Uuid } from './shared.js';
import type { DriverControl } from '../../model/index.js';
import { Name } from '../bounds.js';
import { policy } from '../auth/index.js';

const Params = Type.Object({ instanceUuid: Uuid });
const ArqSchema = Type.Object(
  {
    uuid: Type.String(),
    state: Type.String(),
    cyborgState: Type.String(),
    deviceProfileName: Type.String(),
    binding: Type.Unknown(),
    boundTo: Type.Unknown(),
    error: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: true },
);
const AttachBody = Type.Object(
  {
    acceleratorId: Type.Optional(Uuid),
    resourceClass: Type.Optional(Name({ pattern: '^[A-Z0-9_]+$' })),
    traits: Type.Optional(Type.Array(Name({ pattern: '^[A-Z0-9_]+$' }), { maxItems: 32 })),
    deviceProfileName: Type.Optional(Name()),
    host: Type.Optional(Name()),
    projectId: Type.Optional(Name()),
  },
  { additionalProperties: false },
);
const errors = { 400: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema, 502: ErrorSchema, 503: ErrorSchema, 504: ErrorSchema };

/**
 * The spec's attach-instance / detach-instance, routed API → conductor → ARQ: attach creates an
 * ARQ and binds it to the chosen accelerator (Nova hears of the bind as of its own); detach
 * deletes the instance's ARQs, unbinding each.
 */
export const instanceRoutes: FastifyPluginAsyncTypebox<{ admin: DriverControl }> = async (app, { admin }) => {
  app.post(
    '/instances/:instanceUuid/attach',
    {
      onRequest: policy('cyborg:operator:instance:attach'),
      schema: {
        tags: ['drivers'],
        summary: 'Attach an accelerator to an instance (by id, resource class + traits, or device profile)',
        params: Params,
        body: AttachBody,
        response: { 200: Type.Object({ arq: ArqSchema, accelerator: AcceleratorSchema }), ...errors },
      },
    },
    async (req) => admin.attachInstance(req.params.instanceUuid, req.body, meta(req)),
  );

  app.post(
    '/instances/:instanceUuid/detach',
    {
      onRequest: policy('cyborg:operator:instance:detach'),
      schema: {
        tags: ['drivers'],
        summary: 'Detach every accelerator an instance holds (idempotent)',
        params: Params,
        body: Type.Optional(Type.Object({}, { additionalProperties: false })),
        response: {
          200: Type.Object({ instanceUuid: Type.String(), arqs: Type.Array(Type.String()), accelerators: Type.Array(AcceleratorSchema) }),
          ...errors,
        },
      },
    },
    async (req) => admin.detachInstance(req.params.instanceUuid, meta(req)),
  );
};
