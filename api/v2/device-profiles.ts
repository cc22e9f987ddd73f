import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from '@sinclair/typebox';
import { randomUUID } from 'node:crypto';
import { empty, helpers, type V2Deps } from './context.js';
import { checkArqTotal, checkName, normalizeGroups } from './device-profile-groups.js';
import { checkUuid, needsVersion, notFound, v2Error } from './errors.js';
import { csv, isUuid, pyStr, selfLink, ts, updated } from './format.js';
import { atLeast } from './microversion.js';
import { errors, Links, NullableTimestamp, ProfileParam, TAG, Timestamp } from './schemas.js';
import type { DeviceProfileDoc } from '../../model/index.js';
import { MAX, Text, TEXT_PATTERN } from '../bounds.js';
import { NextLink, PageQuery } from '../paging.js';
import { sendList } from '../stream-list.js';
import type { RouteScope } from '../plugin.js';

const Groups = Type.Array(Type.Record(Type.String(), Type.String()));

/** What a group may hold on input: `resources:` / `trait:` / `accel:` keys with short values (checked further by normalizeGroups). */
const GroupsIn = Type.Array(
  Type.Record(Type.String(), Type.Union([Text(MAX.name), Type.Number(), Type.Boolean()]), {
    maxProperties: MAX.items,
    propertyNames: { maxLength: MAX.name, pattern: TEXT_PATTERN },
  }),
  { maxItems: MAX.items },
);

export const DeviceProfileSchema = Type.Object({
  uuid: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  groups: Groups,
  created_at: Timestamp,
  updated_at: NullableTimestamp,
  links: Links,
});

/** The single-object GET: Cyborg formats its timestamps with Python's str() (`"None"` when unset). */
const DeviceProfileOne = Type.Object({
  device_profile: Type.Object({ ...DeviceProfileSchema.properties, created_at: Type.String(), updated_at: Type.String() }),
});

const CreateBody = Type.Array(
  Type.Object(
    {
      name: Type.Optional(Text(MAX.name)),
      description: Type.Optional(Type.Union([Text(MAX.text), Type.Null()])),
      uuid: Type.Optional(Text(MAX.uuid)),
      groups: Type.Optional(GroupsIn),
    },
    { additionalProperties: true },
  ),
  { maxItems: MAX.items, description: 'a JSON list with exactly one profile' },
);

/** What the routes of deviceProfileRoutes share, built once per registration. */
function deviceProfileContext(deps: V2Deps) {
  const h = helpers(deps);
  const docs = deps.control.documents;
  const serialize = (p: DeviceProfileDoc, base: string) => ({
    uuid: p.uuid,
    name: p.name,
    description: p.description ?? '',
    groups: p.groups,
    created_at: ts(p.createdAt),
    updated_at: updated(p.createdAt, p.updatedAt),
    links: selfLink(base, 'device_profiles', p.uuid),
  });
  const remove = async (p: DeviceProfileDoc): Promise<void> => {
    const users = deps.control.listArqs().filter((a) => a.deviceProfileName === p.name).length;
    if (users > 0) throw v2Error('device_profile.in_use', `Device profile ${p.name} is used by ${users} accelerator request(s); delete them first`);
    await docs.deleteProfile(p.uuid);
  };
  return { deps, h, docs, serialize, remove };
}

type DeviceProfileContext = ReturnType<typeof deviceProfileContext>;

function getDeviceProfiles(app: RouteScope, { deps, h, docs, serialize }: DeviceProfileContext): void {
  app.get(
    '/device_profiles',
    {
      schema: {
        tags: [TAG],
        summary: 'List device profiles',
        hide: deps.hide,
        querystring: Type.Object({ name: Type.Optional(Text(MAX.list)), ...PageQuery }),
        response: { 200: Type.Object({ device_profiles: Type.Array(DeviceProfileSchema), next: NextLink }), ...errors(400, 401, 403, 406) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:device_profile:get_all');
      const names = req.query.name === undefined ? undefined : new Set(csv(req.query.name));
      const base = h.base(req);
      const { limit, marker } = req.query;
      return sendList(
        reply,
        'device_profiles',
        docs.listProfiles().filter((p) => !names || names.has(p.name)),
        { limit, marker, url: req.url },
        { id: (p) => p.uuid, toJson: (p) => serialize(p, base), pageMax: deps.limits.pageMax },
      );
    },
  );
}

function getDeviceProfilesOne(app: RouteScope, { deps, h, docs, serialize }: DeviceProfileContext): void {
  app.get(
    '/device_profiles/:id',
    {
      schema: {
        tags: [TAG],
        summary: 'Show one device profile by uuid (or by name at 2.2)',
        hide: deps.hide,
        params: Type.Object({ id: ProfileParam }),
        response: { 200: DeviceProfileOne, ...errors(400, 401, 403, 404, 406) },
      },
    },
    async (req) => {
      h.authorize(req, 'cyborg:device_profile:get_one');
      const id = req.params.id;
      let p: DeviceProfileDoc | undefined;
      if (isUuid(id)) {
        p = docs.getProfile(id);
        if (!p) throw notFound.profile('uuid', id);
      } else {
        if (!atLeast(req.microversion, 2)) throw needsVersion('2.2');
        p = docs.profileByName(id);
        if (!p) throw notFound.profile('name', id);
      }
      return { device_profile: { ...serialize(p, h.base(req)), created_at: pyStr(p.createdAt), updated_at: pyStr(p.updatedAt) } };
    },
  );
}

function postDeviceProfiles(app: RouteScope, { deps, h, docs, serialize }: DeviceProfileContext): void {
  app.post(
    '/device_profiles',
    {
      schema: {
        tags: [TAG],
        summary: 'Create a device profile',
        hide: deps.hide,
        body: CreateBody,
        response: { 201: DeviceProfileSchema, ...errors(400, 401, 403, 406, 409) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:device_profile:create');
      if (req.body.length !== 1) throw v2Error('request.invalid', `Expected a list with exactly one device profile, got ${req.body.length}`);
      const input = req.body[0]!;
      const name = checkName(input.name);
      const groups = normalizeGroups(input.groups);
      checkArqTotal(groups, deps.limits.maxArqsPerRequest);
      if (input.uuid !== undefined) checkUuid(input.uuid);
      const now = new Date().toISOString();
      const doc = await docs.createProfile({
        uuid: input.uuid ?? randomUUID(),
        name,
        description: input.description ?? '',
        groups,
        createdAt: now,
        updatedAt: null,
      });
      return reply.status(201).send(serialize(doc, h.base(req)));
    },
  );
}

function deleteDeviceProfilesOne(app: RouteScope, { deps, h, docs, remove }: DeviceProfileContext): void {
  app.delete(
    '/device_profiles/:uuid',
    {
      schema: {
        tags: [TAG],
        summary: 'Delete a device profile',
        hide: deps.hide,
        params: Type.Object({ uuid: ProfileParam }),
        response: { ...errors(400, 401, 403, 404, 406, 409) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:device_profile:delete');
      const id = req.params.uuid;
      const p = isUuid(id) ? docs.getProfile(id) : docs.profileByName(id);
      if (!p) throw notFound.profile(isUuid(id) ? 'uuid' : 'name', id);
      await remove(p);
      return empty(reply as FastifyReply, 204);
    },
  );
}

function deleteDeviceProfiles(app: RouteScope, { deps, h, docs, remove }: DeviceProfileContext): void {
  app.delete(
    '/device_profiles',
    {
      schema: {
        tags: [TAG],
        summary: 'Delete device profiles by name (?value=n1,n2)',
        hide: deps.hide,
        querystring: Type.Object({ value: Text(MAX.list, { minLength: 1 }) }),
        response: { ...errors(400, 401, 403, 404, 406, 409) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:device_profile:delete');
      for (const v of csv(req.query.value)) {
        const p = isUuid(v) ? docs.getProfile(v) : docs.profileByName(v);
        if (!p) throw notFound.profile(isUuid(v) ? 'uuid' : 'name', v);
        await remove(p);
      }
      return empty(reply as FastifyReply, 204);
    },
  );
}

/**
 * `/v2/device_profiles`: create (from a one-element list), list (`?name=a,b`), show by uuid or
 * (at 2.2) by name, delete by uuid or by `?value=n1,n2`.
 */
export const deviceProfileRoutes: FastifyPluginAsyncTypebox<V2Deps> = async (app, deps) => {
  const ctx = deviceProfileContext(deps);
  getDeviceProfiles(app, ctx);
  getDeviceProfilesOne(app, ctx);
  postDeviceProfiles(app, ctx);
  deleteDeviceProfilesOne(app, ctx);
  deleteDeviceProfiles(app, ctx);
};
