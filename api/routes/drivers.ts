import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { meta } from './accelerators.js';
import { instanceRoutes } from './instances.js';
import { serviceRoutes } from './services.js';
import { ErrorSchema } from './shared.js';
import type { DriverControl } from '../../model/index.js';
import { MAX, Name, Text } from '../bounds.js';
import { policy } from '../auth/index.js';
import { NextLink, page, pageBody, PageQuery } from '../paging.js';
import { acceptedIfUnderWay, resourceOf } from './accepted.js';
import { apiLimits } from '../limits.js';

export const DriverSchema = Type.Object({
  id: Type.String({ description: 'stable: derived from host and driver name' }),
  host: Type.String(),
  name: Type.String(),
  version: Type.String(),
  state: Type.Union([
    Type.Literal('installed'),
    Type.Literal('uninstalled'),
    Type.Literal('installing'),
    Type.Literal('uninstalling'),
    Type.Literal('updating'),
  ]),
  loaded: Type.Boolean({ description: "the host's agent loaded it at its last registration" }),
  hostState: Type.String(),
  accelerators: Type.Integer(),
  inUse: Type.Integer({ description: 'accelerators of this driver that instances hold now' }),
  lastError: Type.Union([Type.Object({ op: Type.String(), reason: Type.String(), at: Type.String() }), Type.Null()]),
  updatedAt: Type.String(),
});

const Ref = Type.Object({
  ref: Text(2 * MAX.name + 1, { minLength: 1, description: 'driver id, `name@host`, or `name` (with `host` when several hosts have it)' }),
});
const Version = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._+~-]*$' });
const Target = Type.Object({ host: Type.Optional(Name()) }, { additionalProperties: false });
const WithVersion = Type.Object({ host: Type.Optional(Name()), version: Type.Optional(Version) }, { additionalProperties: false });
const UpdateBody = Type.Object(
  {
    host: Type.Optional(Name()),
    version: Type.Optional(Version),
    force: Type.Optional(Type.Boolean({ description: 'update even though the host is not drained' })),
  },
  { additionalProperties: false },
);
const errors = { 400: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema, 502: ErrorSchema, 503: ErrorSchema, 504: ErrorSchema };

/**
 * The generic-driver spec's driver-list / install-driver / uninstall-driver / update-driver:
 * drivers per host, changed on the host's agent through the conductor. Each write answers once
 * the agent has done it and the outcome is committed; 409 says why it was refused.
 */
export const driverRoutes: FastifyPluginAsyncTypebox<{ admin: DriverControl; pageMax?: number }> = async (app, { admin, pageMax = apiLimits().pageMax }) => {
  app.get(
    '/drivers',
    {
      onRequest: policy('cyborg:operator:driver:get'),
      schema: {
        tags: ['drivers'],
        summary: 'List drivers per host with their state and version (paged: limit, marker = the last id)',
        querystring: Type.Object({ host: Type.Optional(Text(MAX.name)), ...PageQuery }, { additionalProperties: false }),
        response: { 200: Type.Object({ drivers: Type.Array(DriverSchema), next: NextLink }), 400: ErrorSchema },
      },
    },
    async (req) => {
      const { limit, marker, ...filter } = req.query;
      return pageBody(
        'drivers',
        page(await admin.listDrivers(filter), { limit, marker }, (d) => d.id, pageMax),
        req.url,
      );
    },
  );

  app.get(
    '/drivers/:ref',
    {
      onRequest: policy('cyborg:operator:driver:get'),
      schema: { tags: ['drivers'], summary: 'One driver on one host', params: Ref, querystring: Target, response: { 200: DriverSchema, ...errors } },
    },
    async (req) => admin.getDriver(req.params.ref, req.query.host),
  );

  app.post(
    '/drivers/:ref/install',
    {
      onRequest: policy('cyborg:operator:driver:install'),
      schema: {
        tags: ['drivers'],
        summary: 'Install the driver on its host (optionally at a version)',
        params: Ref,
        body: Type.Optional(WithVersion),
        response: { 200: DriverSchema, 202: DriverSchema, ...errors },
      },
    },
    async (req, reply) => acceptedIfUnderWay(req, reply, await admin.installDriver(req.params.ref, req.body ?? {}, meta(req)), driverLocation(req)),
  );

  app.post(
    '/drivers/:ref/uninstall',
    {
      onRequest: policy('cyborg:operator:driver:uninstall'),
      schema: {
        tags: ['drivers'],
        summary: 'Uninstall the driver from its host (refused while an instance holds one of its accelerators)',
        params: Ref,
        body: Type.Optional(Target),
        response: { 200: DriverSchema, 202: DriverSchema, ...errors },
      },
    },
    async (req, reply) => acceptedIfUnderWay(req, reply, await admin.uninstallDriver(req.params.ref, req.body ?? {}, meta(req)), driverLocation(req)),
  );

  app.post(
    '/drivers/:ref/update',
    {
      onRequest: policy('cyborg:operator:driver:update'),
      schema: {
        tags: ['drivers'],
        summary: 'Update the driver on its host (to a version, or to what the agent ships): only on a drained host, or with force',
        params: Ref,
        body: Type.Optional(UpdateBody),
        response: { 200: DriverSchema, 202: DriverSchema, ...errors },
      },
    },
    async (req, reply) => acceptedIfUnderWay(req, reply, await admin.updateDriver(req.params.ref, req.body ?? {}, meta(req)), driverLocation(req)),
  );
};

/** Registers the driver, service and instance routes (under the operator prefix). */
export const genericDriverRoutes: FastifyPluginAsyncTypebox<{ admin: DriverControl; pageMax?: number }> = async (app, opts) => {
  await app.register(driverRoutes, opts);
  await app.register(serviceRoutes, opts);
  await app.register(instanceRoutes, opts);
};

/** Where a driver operation's outcome shows: the driver on its host. */
function driverLocation(req: FastifyRequest): string {
  const host = (req.body as { host?: string } | undefined)?.host;
  return `${resourceOf(req)}${host ? `?host=${encodeURIComponent(host)}` : ''}`;
}
