import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import { DriverError } from '../../errors/index.js';
import type { DeployableEntry } from './catalogue.js';
import { helpers, type V2Deps } from './context.js';
import { checkUuid, notFound } from './errors.js';
import { intId, selfAndBookmark, ts, updated } from './format.js';
import { errors, IgnoredFilters, Links, NullableTimestamp, TAG, Timestamp, UuidParam } from './schemas.js';
import { MAX, Text } from '../bounds.js';
import { page, PageQuery } from '../paging.js';
import type { RouteScope } from '../plugin.js';

export const DeployableSchema = Type.Object({
  uuid: Type.String(),
  parent_id: Type.Union([Type.Integer(), Type.Null()]),
  root_id: Type.Union([Type.Integer(), Type.Null()]),
  name: Type.String(),
  num_accelerators: Type.Integer(),
  device_id: Type.Integer(),
  attributes_list: Type.String({ description: 'JSON text: a list of single-key maps' }),
  rp_uuid: Type.String(),
  driver_name: Type.String(),
  bitstream_id: Type.Union([Type.String(), Type.Null()]),
  links: Links,
  created_at: Timestamp,
  updated_at: NullableTimestamp,
});

type Deployable = Static<typeof DeployableSchema>;

const ProgramOp = Type.Object({
  op: Type.Literal('replace'),
  path: Type.Literal('/program'),
  value: Type.Array(Type.Object({ image_uuid: Text(MAX.name, { minLength: 1 }) }, { additionalProperties: true }), { minItems: 1, maxItems: MAX.items }),
});
const ProgramBody = Type.Array(ProgramOp, { minItems: 1, maxItems: 1 });

/** What the routes of deployableRoutes share, built once per registration. */
function deployableContext(deps: V2Deps) {
  const h = helpers(deps);
  const { catalogue, control } = deps;
  const serialize = (e: DeployableEntry, base: string): Deployable => {
    const d = e.deployable;
    const view = catalogue.view(d.uuid);
    const createdAt = catalogue.createdAt(d.uuid);
    return {
      uuid: d.uuid,
      parent_id: null,
      root_id: null,
      name: d.name,
      num_accelerators: d.numAccelerators,
      device_id: intId(e.device.uuid),
      attributes_list: JSON.stringify(d.attributes.map((a) => ({ [a.key]: a.value }))),
      rp_uuid: view?.rpUuid ?? '',
      driver_name: d.driverName,
      bitstream_id: view?.program?.bitstreamId ?? null,
      links: selfAndBookmark(base, 'deployables', d.uuid),
      created_at: ts(createdAt),
      updated_at: updated(createdAt, view?.updatedAt),
    };
  };
  const find = (uuid: string): DeployableEntry => {
    const e = catalogue.deployable(checkUuid(uuid));
    if (!e) throw notFound.deployable(uuid);
    return e;
  };
  const program = async (req: { params: { uuid: string }; body: Static<typeof ProgramBody> } & Parameters<typeof h.authorize>[0]): Promise<Deployable> => {
    h.authorize(req, 'cyborg:deployable:program');
    const e = find(req.params.uuid);
    const image = req.body[0]!.value[0]!.image_uuid;
    const view = await control.act(e.deployable.uuid, { type: 'PROGRAM', bitstreamId: image }, h.meta(req));
    // A programming that failed is recorded on the accelerator (cleared when one starts): in
    // `error`, or back in service when it never touched the card or was rolled back.
    if (view.error?.op === 'program') {
      throw new DriverError('driver.failed', `Programming deployable ${e.deployable.uuid} failed: ${view.error.reason}`, { uuid: e.deployable.uuid });
    }
    return serialize(e, h.base(req));
  };
  const programSchema = (summary: string, hide?: boolean) => ({
    tags: [TAG],
    summary,
    hide,
    params: Type.Object({ uuid: UuidParam }),
    body: ProgramBody,
    response: { 200: DeployableSchema, ...errors(400, 401, 403, 404, 406, 409, 502, 503, 504) },
  });
  return { deps, h, catalogue, control, serialize, find, program, programSchema };
}

type DeployableContext = ReturnType<typeof deployableContext>;

function getDeployables(app: RouteScope, { deps, h, catalogue, serialize }: DeployableContext): void {
  app.get(
    '/deployables',
    {
      schema: {
        tags: [TAG],
        summary: "List deployables (Cyborg's limit and marker: at most api.pageMax, after the uuid `marker`)",
        hide: deps.hide,
        querystring: Type.Object({ name: Type.Optional(Text(MAX.name)), filters: IgnoredFilters, ...PageQuery }, { additionalProperties: true }),
        response: { 200: Type.Object({ deployables: Type.Array(DeployableSchema) }), ...errors(400, 401, 403, 406) },
      },
    },
    async (req) => {
      h.authorize(req, 'cyborg:deployable:get_all');
      const base = h.base(req);
      const { name, limit, marker } = req.query;
      const all = catalogue.deployables().filter((e) => name === undefined || e.deployable.name === name);
      return { deployables: page(all, { limit, marker }, (e) => e.deployable.uuid, deps.limits.pageMax).items.map((e) => serialize(e, base)) };
    },
  );
}

function getDeployablesOne(app: RouteScope, { deps, h, serialize, find }: DeployableContext): void {
  app.get(
    '/deployables/:uuid',
    {
      schema: {
        tags: [TAG],
        summary: 'Show one deployable',
        hide: deps.hide,
        params: Type.Object({ uuid: UuidParam }),
        response: { 200: DeployableSchema, ...errors(400, 401, 403, 404, 406) },
      },
    },
    async (req) => {
      h.authorize(req, 'cyborg:deployable:get_one');
      return serialize(find(req.params.uuid), h.base(req));
    },
  );
}

function patchDeployablesProgram(app: RouteScope, { deps, program, programSchema }: DeployableContext): void {
  app.patch('/deployables/:uuid/program', { schema: programSchema('Program a deployable (FPGA bitstream by Glance image uuid)', deps.hide) }, program);
}

function patchDeployablesOne(app: RouteScope, { program, programSchema }: DeployableContext): void {
  app.patch('/deployables/:uuid', { schema: programSchema('Program a deployable (the form without /program)', true) }, program);
}

/**
 * `/v2/deployables`: list (filter `name`), show, and program. Program is a JSON-patch on
 * `/program`; clients send it to `/deployables/{uuid}/program` or to `/deployables/{uuid}`.
 */
export const deployableRoutes: FastifyPluginAsyncTypebox<V2Deps> = async (app, deps) => {
  const ctx = deployableContext(deps);
  getDeployables(app, ctx);
  getDeployablesOne(app, ctx);
  patchDeployablesProgram(app, ctx);
  patchDeployablesOne(app, ctx);
};
