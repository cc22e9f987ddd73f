import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CyborgError } from '../../errors/index.js';
import { capacityOf, CapacitySchema, type AcceleratorView, type ControlPlane } from '../../model/index.js';
import { policy } from '../auth/index.js';
import { Name } from '../bounds.js';
import { ErrorSchema } from './shared.js';
import { AcceleratorStates } from '../../machines/index.js';

// Placement's own patterns: a resource class and a trait are upper-case names.
const Query = Type.Object(
  {
    resourceClass: Type.Optional(Type.String({ pattern: '^[A-Z0-9_]{1,255}$', description: 'only this resource class (PGPU, FPGA, CUSTOM_…)' })),
    trait: Type.Optional(Type.String({ pattern: '^[A-Z0-9_]{1,255}$', description: 'only accelerators reporting this trait' })),
    host: Type.Optional(Name()),
  },
  { additionalProperties: false },
);

/**
 * `GET /cyborg/v1/capacity`: free capacity by resource class and trait, per host and for the
 * fleet (model/capacity.ts), from the committed views — the numbers Placement holds for
 * Cyborg's providers. A filter naming a class, trait or host the fleet does not have is a 4xx
 * naming the field and what there is, not an empty answer that reads as "none free".
 */
export const capacityRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane }> = async (app, { control }) => {
  app.get(
    '/capacity',
    {
      onRequest: policy('cyborg:operator:capacity:get'),
      schema: {
        tags: ['operator'],
        summary: 'Capacity by resource class and trait, per host and fleet: total, used, reserved (quarantined, maintenance), free',
        querystring: Query,
        response: { 200: CapacitySchema, 400: ErrorSchema, 404: ErrorSchema },
      },
    },
    async (req) => {
      const q = req.query;
      if (q.host !== undefined) control.getHost(q.host); // 404 naming the host
      let views: AcceleratorView[] = control
        .listAccelerators(q.host ? { host: q.host } : {})
        .filter((a) => a.state !== AcceleratorStates.removed && a.resourceClass);
      if (q.resourceClass !== undefined) {
        const known = [...new Set(views.map((a) => a.resourceClass!))].sort();
        if (!known.includes(q.resourceClass)) {
          throw new CyborgError(
            'request.invalid',
            `resourceClass ${q.resourceClass}: no accelerator${q.host ? ` of host ${q.host}` : ''} has this resource class (known: ${known.join(', ') || 'none'})`,
            { field: 'resourceClass', known },
          );
        }
        views = views.filter((a) => a.resourceClass === q.resourceClass);
      }
      if (q.trait !== undefined) {
        const known = [...new Set(views.flatMap((a) => a.traits))].sort();
        if (!known.includes(q.trait)) {
          throw new CyborgError(
            'request.invalid',
            `trait ${q.trait}: no accelerator${q.resourceClass ? ` of class ${q.resourceClass}` : ''} reports this trait (known: ${known.join(', ') || 'none'})`,
            { field: 'trait', known },
          );
        }
        views = views.filter((a) => a.traits.includes(q.trait!));
      }
      return capacityOf(views);
    },
  );
};
