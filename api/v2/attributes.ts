import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { randomUUID } from 'node:crypto';
import { stableId } from '../../ids/index.js';
import type { Catalogue } from './catalogue.js';
import { empty, helpers, type V2Deps } from './context.js';
import { checkUuid, notFound, v2Error } from './errors.js';
import { intId, selfLink, ts, updated } from './format.js';
import { errors, Links, NullableTimestamp, TAG, Timestamp, UuidParam } from './schemas.js';
import type { AttributeDoc } from '../../model/index.js';
import { MAX, Text } from '../bounds.js';
import { NextLink, PageQuery } from '../paging.js';
import { sendList } from '../stream-list.js';
import type { RouteScope } from '../plugin.js';

export const AttributeSchema = Type.Object({
  uuid: Type.String(),
  deployable_id: Type.Integer(),
  key: Type.String(),
  value: Type.String(),
  created_at: Timestamp,
  updated_at: NullableTimestamp,
  links: Links,
});

const DeployableId = Type.Union([Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), Type.String({ pattern: '^[0-9]+$', maxLength: 16 })]);
const AttributeIn = Type.Object(
  {
    deployable_id: DeployableId,
    key: Text(MAX.name, { minLength: 1 }),
    value: Text(MAX.name),
  },
  { additionalProperties: false },
);
/** The bare body, the sample's list wrapper, or a single-object wrapper: clients send all three. */
const CreateBody = Type.Union([
  AttributeIn,
  Type.Object({ attributes: Type.Array(AttributeIn, { minItems: 1, maxItems: 1 }) }, { additionalProperties: false }),
  Type.Object({ attribute: AttributeIn }, { additionalProperties: false }),
]);

/** An attribute as the API shows it: stored by an operator, or reported by a driver. */
interface Row extends AttributeDoc {
  discovered: boolean;
}

/** Driver-reported attributes get a uuid derived from (deployable, key): stable across restarts. */
export function discoveredAttributes(catalogue: Catalogue): Row[] {
  return catalogue.deployables().flatMap((e) =>
    e.deployable.attributes.map((a) => {
      const uuid = stableId(e.deployable.uuid, 'attribute', a.key);
      const createdAt = catalogue.createdAt(uuid);
      return { uuid, deployableUuid: e.deployable.uuid, key: a.key, value: a.value, createdAt, updatedAt: null, discovered: true };
    }),
  );
}

/** What the routes of attributeRoutes share, built once per registration. */
function attributeContext(deps: V2Deps) {
  const h = helpers(deps);
  const { catalogue, control } = deps;
  const rows = (): Row[] => [...discoveredAttributes(catalogue), ...control.documents.listAttributes().map((a) => ({ ...a, discovered: false }))];
  const serialize = (r: Row, base: string): Static<typeof AttributeSchema> => ({
    uuid: r.uuid,
    deployable_id: intId(r.deployableUuid),
    key: r.key,
    value: r.value,
    created_at: ts(r.createdAt),
    updated_at: updated(r.createdAt, r.updatedAt),
    links: selfLink(base, 'attributes', r.uuid),
  });
  const find = (uuid: string): Row => {
    checkUuid(uuid);
    const r = rows().find((x) => x.uuid === uuid);
    if (!r) throw notFound.attribute(uuid);
    return r;
  };
  return { deps, h, catalogue, control, rows, serialize, find };
}

type AttributeContext = ReturnType<typeof attributeContext>;

function getAttributes(app: RouteScope, { deps, h, rows, serialize }: AttributeContext): void {
  app.get(
    '/attributes',
    {
      schema: {
        tags: [TAG],
        summary: 'List attributes',
        hide: deps.hide,
        querystring: Type.Object({
          deployable_id: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
          key: Type.Optional(Text(MAX.name)),
          ...PageQuery,
        }),
        response: { 200: Type.Object({ attributes: Type.Array(AttributeSchema), next: NextLink }), ...errors(400, 401, 403, 406) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:attribute:get_all');
      const { deployable_id: dep, key, limit, marker } = req.query;
      const base = h.base(req);
      return sendList(
        reply,
        'attributes',
        rows().filter((r) => (dep === undefined || intId(r.deployableUuid) === dep) && (key === undefined || r.key === key)),
        { limit, marker, url: req.url },
        { id: (r) => r.uuid, toJson: (r) => serialize(r, base), pageMax: deps.limits.pageMax },
      );
    },
  );
}

function getAttributesOne(app: RouteScope, { deps, h, serialize, find }: AttributeContext): void {
  app.get(
    '/attributes/:uuid',
    {
      schema: {
        tags: [TAG],
        summary: 'Show one attribute',
        hide: deps.hide,
        params: Type.Object({ uuid: UuidParam }),
        response: { 200: AttributeSchema, ...errors(400, 401, 403, 404, 406) },
      },
    },
    async (req) => {
      h.authorize(req, 'cyborg:attribute:get_one');
      return serialize(find(req.params.uuid), h.base(req));
    },
  );
}

function postAttributes(app: RouteScope, { deps, h, catalogue, control, serialize, find }: AttributeContext): void {
  app.post(
    '/attributes',
    {
      schema: {
        tags: [TAG],
        summary: 'Add an attribute to a deployable',
        hide: deps.hide,
        body: CreateBody,
        response: { 201: AttributeSchema, ...errors(400, 401, 403, 406) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:attribute:create');
      const body = req.body;
      const a = 'attributes' in body ? body.attributes[0]! : 'attribute' in body ? body.attribute : body;
      const depId = Number(a.deployable_id);
      const dep = catalogue.deployables().find((e) => intId(e.deployable.uuid) === depId);
      if (!dep) throw v2Error('request.invalid', `deployable_id ${a.deployable_id} does not name a deployable`);
      const now = new Date().toISOString();
      const doc = await control.documents.createAttribute({
        uuid: randomUUID(),
        deployableUuid: dep.deployable.uuid,
        key: a.key,
        value: a.value,
        createdAt: now,
        updatedAt: null,
      });
      return reply.status(201).send(serialize({ ...doc, discovered: false }, h.base(req)));
    },
  );
}

function deleteAttributesOne(app: RouteScope, { deps, h, control, find }: AttributeContext): void {
  app.delete(
    '/attributes/:uuid',
    {
      schema: {
        tags: [TAG],
        summary: 'Delete an operator-added attribute',
        hide: deps.hide,
        params: Type.Object({ uuid: UuidParam }),
        response: { ...errors(400, 401, 403, 404, 406, 409) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:attribute:delete');
      const r = find(req.params.uuid);
      if (r.discovered)
        throw v2Error(
          'attribute.discovered',
          `Attribute ${r.uuid} is reported by the deployable's driver and comes back with the next discovery; it cannot be deleted.`,
        );
      await control.documents.deleteAttribute(r.uuid);
      return empty(reply as FastifyReply, 204);
    },
  );
}

/**
 * `/v2/attributes`: driver-reported attributes and operator-added ones (stored documents, not
 * pushed to Placement, as in Cyborg). `deployable_id` is the deployable's integer id.
 */
export const attributeRoutes: FastifyPluginAsyncTypebox<V2Deps> = async (app, deps) => {
  const ctx = attributeContext(deps);
  getAttributes(app, ctx);
  getAttributesOne(app, ctx);
  postAttributes(app, ctx);
  deleteAttributesOne(app, ctx);
};
