import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { meta } from './accelerators.js';
import { ErrorSchema } from './shared.js';
import { BackendServiceSchema, type DriverControl } from '../../model/index.js';
import { MAX, Name, Text } from '../bounds.js';
import { policy } from '../auth/index.js';
import { NextLink, page, pageBody, PageQuery } from '../paging.js';
import { apiLimits } from '../limits.js';

export const ServiceSchema = Type.Composite([BackendServiceSchema, Type.Object({ host: Type.String(), driver: Type.String(), discoveredAt: Type.String() })]);

const Filter = Type.Object(
  {
    host: Type.Optional(Text(MAX.name)),
    driver: Type.Optional(Text(MAX.name)),
  },
  { additionalProperties: false },
);

/** The generic-driver spec's service-list and discover-services: what each backend offers (VFs, mdev types, programmed functions). */
export const serviceRoutes: FastifyPluginAsyncTypebox<{ admin: DriverControl; pageMax?: number }> = async (app, { admin, pageMax = apiLimits().pageMax }) => {
  app.get(
    '/services',
    {
      onRequest: policy('cyborg:operator:service:get'),
      schema: {
        tags: ['drivers'],
        summary: 'Services of the backends, as last discovered (paged: limit, marker = the last id)',
        querystring: Type.Composite([Filter, Type.Object(PageQuery)], { additionalProperties: false }),
        response: { 200: Type.Object({ services: Type.Array(ServiceSchema), next: NextLink }), 400: ErrorSchema },
      },
    },
    async (req) => {
      const { limit, marker, ...filter } = req.query;
      return pageBody(
        'services',
        page(await admin.listServices(filter), { limit, marker }, (s) => s.id, pageMax),
        req.url,
      );
    },
  );

  app.post(
    '/services/discover',
    {
      onRequest: policy('cyborg:operator:service:discover'),
      schema: {
        tags: ['drivers'],
        summary: 'Ask the agents (one host, or every online host) for the services of their drivers, and record them',
        body: Type.Optional(Type.Object({ host: Type.Optional(Name()) }, { additionalProperties: false })),
        response: {
          200: Type.Object({
            services: Type.Array(ServiceSchema),
            failures: Type.Array(Type.Object({ host: Type.String(), driver: Type.Optional(Type.String()), code: Type.String(), reason: Type.String() })),
          }),
          404: ErrorSchema,
          502: ErrorSchema,
          503: ErrorSchema,
          504: ErrorSchema,
        },
      },
    },
    async (req) => admin.discoverServices(req.body ?? {}, meta(req)),
  );
};
