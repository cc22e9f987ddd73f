import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/**
 * The OpenAPI document, generated from the route schemas: Cyborg's v2 routes and this project's
 * own. Served as `/openapi.json` (and `/docs` for people). Register before any route, so that
 * every route registered afterwards is collected.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'cyborg',
        description:
          'Accelerator manager wire-compatible with OpenStack Cyborg. Tag "cyborg v2": OpenStack Cyborg\'s v2 API (microversions 2.0-2.3, header OpenStack-API-Version: accelerator 2.N; errors as {"error_message": ...}). Other tags: this project\'s own API under /cyborg/v1.',
        version: '0.1.0',
      },
      tags: [
        { name: 'cyborg v2', description: 'OpenStack Cyborg v2 API, as Nova and `openstack accelerator` call it (also unversioned: /devices == /v2/devices)' },
        { name: 'operator', description: "This project's operator API" },
        { name: 'health', description: 'Liveness and readiness' },
      ],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
