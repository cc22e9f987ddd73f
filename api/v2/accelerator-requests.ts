import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { arqCount, checkArqTotal } from './device-profile-groups.js';
import { empty, helpers, type V2Deps } from './context.js';
import { checkUuid, notFound, v2Error } from './errors.js';
import { csv, isUuid, selfLink, ts, updated } from './format.js';
import { parsePatch, PatchMap, PatchOps, type ParsedPatch, type PatchOpsT } from './arq-patch.js';
import { requireServiceToken } from '../auth/index.js';
import { errors, Links, NullableTimestamp, TAG, Timestamp, UuidParam } from './schemas.js';
import type { ArqView, ControlPlane } from '../../model/index.js';
import { MAX, Text } from '../bounds.js';
import { NextLink, PageQuery } from '../paging.js';
import { sendList } from '../stream-list.js';
import { ArqStates, type ArqTag } from '../../machines/index.js';

export const ArqSchema = Type.Object({
  uuid: Type.String(),
  state: Type.String({ description: 'Initial | BindStarted | Bound | BindFailed | Unbound | UnbindFailed | Deleting' }),
  device_profile_name: Type.String(),
  device_profile_group_id: Type.Integer(),
  hostname: Type.Union([Type.String(), Type.Null()]),
  device_rp_uuid: Type.Union([Type.String(), Type.Null()]),
  instance_uuid: Type.Union([Type.String(), Type.Null()]),
  project_id: Type.Union([Type.String(), Type.Null()]),
  attach_handle_type: Type.String({ description: '"" unless Bound; then PCI, MDEV or TEST_PCI' }),
  attach_handle_uuid: Type.Union([Type.String(), Type.Null()]),
  attach_handle_info: Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()])),
  links: Links,
  created_at: Timestamp,
  updated_at: NullableTimestamp,
});
type Arq = Static<typeof ArqSchema>;

/** Nova's bind_state=resolved (Cyborg's Bound, BindFailed, Deleting): the ARQ machine's `resolved` tag. */
const RESOLVED: ArqTag = 'resolved';
const Arqs = Type.Object({ arqs: Type.Array(ArqSchema) });
const ArqPage = Type.Object({ arqs: Type.Array(ArqSchema), next: NextLink });

/** The v2 form of an ARQ; the attach handle shows only while it is Bound (Nova reads it then). */
export function arqBody(v: ArqView, control: ControlPlane, base: string): Arq {
  const handle = v.cyborgState === ArqStates.Bound && v.boundTo ? control.attachHandle(v.boundTo.acceleratorId, v.boundTo.handleUuid) : undefined;
  let info: Record<string, string | null> = {};
  if (handle) {
    try {
      info = JSON.parse(handle.attachInfo) as Record<string, string | null>;
    } catch {
      info = {};
    }
  }
  return {
    uuid: v.uuid,
    state: v.cyborgState,
    device_profile_name: v.deviceProfileName,
    device_profile_group_id: v.deviceProfileGroupId,
    hostname: v.binding?.hostname ?? null,
    device_rp_uuid: v.binding?.deviceRpUuid ?? null,
    instance_uuid: v.binding?.instanceUuid ?? null,
    project_id: v.projectId,
    attach_handle_type: handle?.attachType ?? '',
    attach_handle_uuid: handle?.uuid ?? null,
    attach_handle_info: info,
    links: selfLink(base, 'accelerator_requests', v.uuid),
    created_at: ts(v.createdAt),
    updated_at: updated(v.createdAt, v.updatedAt),
  };
}

/**
 * `/v2/accelerator_requests`: what Nova drives a boot with. Create from a device profile (one
 * ARQ per requested resource per group), list (`instance`, `bind_state=resolved` → 423 while
 * any is unresolved), show, bind/unbind by PATCH (Nova's collection form and the CLI's item
 * form), delete by `instance` (idempotent), by `arqs=` or by uuid. A non-admin only ever sees
 * the ARQs of their own project.
 */
export const arqRoutes: FastifyPluginAsyncTypebox<V2Deps> = async (app, deps) => {
  const h = helpers(deps);
  const { control } = deps;

  /** The ARQ if the caller may see it; a uuid of another project is simply not found. */
  const visible = (req: FastifyRequest, uuid: string): ArqView | undefined => {
    if (!isUuid(uuid)) return undefined;
    try {
      const v = control.getArq(uuid);
      const scope = h.projectScope(req);
      return scope === undefined || v.projectId === scope ? v : undefined;
    } catch {
      return undefined;
    }
  };

  app.post(
    '/accelerator_requests',
    {
      schema: {
        tags: [TAG],
        summary: 'Create ARQs from a device profile',
        hide: deps.hide,
        body: Type.Object({ device_profile_name: Text(MAX.name) }, { additionalProperties: true }),
        response: { 201: Arqs, ...errors(400, 401, 403, 404, 406) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:arq:create');
      const name = req.body.device_profile_name;
      const profile = control.documents.profileByName(name);
      if (!profile) throw notFound.profile('name', name);
      const projectId = req.identity.projectId;
      // A profile stored before the cap (or under a higher one) is still held to it here.
      checkArqTotal(profile.groups, deps.limits.maxArqsPerRequest);
      const wanted = profile.groups.flatMap((g, i) => Array.from({ length: arqCount(g) }, () => i));
      const views = await Promise.all(
        wanted.map((group) => control.createArq({ deviceProfileName: name, deviceProfileGroupId: group, projectId }, h.meta(req))),
      );
      const base = h.base(req);
      return reply.status(201).send({ arqs: views.map((v) => arqBody(v, control, base)) });
    },
  );

  app.get(
    '/accelerator_requests',
    {
      schema: {
        tags: [TAG],
        summary: 'List ARQs (Nova: ?instance=<uuid>&bind_state=resolved, 423 while unresolved)',
        hide: deps.hide,
        querystring: Type.Object({ instance: Type.Optional(Text(MAX.name)), bind_state: Type.Optional(Text(32)), ...PageQuery }),
        response: { 200: ArqPage, ...errors(400, 401, 403, 406) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:arq:get_all');
      const { instance, bind_state: bindState } = req.query;
      if (bindState !== undefined && bindState !== 'resolved') {
        throw v2Error('request.invalid', `Bad state: ${bindState} for ARQ: None. Expected state(s): ['resolved']`);
      }
      let arqs = control.listArqs({ instanceUuid: instance, projectId: h.projectScope(req) });
      if (bindState === 'resolved') {
        if (instance !== undefined && arqs.some((a) => !a.tags.includes(RESOLVED)))
          throw v2Error('arq.unresolved', `ARQs of instance ${instance} are not resolved yet`);
        arqs = arqs.filter((a) => a.tags.includes(RESOLVED));
      }
      const base = h.base(req);
      // Without limit or marker, all of them (as Nova and tempest expect), streamed: bounded memory per reader.
      const { limit, marker } = req.query;
      return sendList(
        reply,
        'arqs',
        arqs,
        { limit, marker, url: req.url },
        { id: (a) => a.uuid, toJson: (a) => arqBody(a, control, base), pageMax: deps.limits.pageMax },
      );
    },
  );

  app.get(
    '/accelerator_requests/:uuid',
    {
      schema: {
        tags: [TAG],
        summary: 'Show one ARQ',
        hide: deps.hide,
        params: Type.Object({ uuid: UuidParam }),
        response: { 200: ArqSchema, ...errors(400, 401, 403, 404, 406) },
      },
    },
    async (req) => {
      h.authorize(req, 'cyborg:arq:get_one');
      const uuid = req.params.uuid;
      const v = visible(req, checkUuid(uuid));
      if (!v) throw notFound.arq(uuid);
      return arqBody(v, control, h.base(req));
    },
  );

  /** Bind or unbind every ARQ of one patch; all are checked before any of them moves. */
  const applyPatch = async (req: FastifyRequest, patch: Record<string, PatchOpsT>): Promise<void> => {
    h.authorize(req, 'cyborg:arq:update');
    const parsed: ParsedPatch = parsePatch(patch, req.microversion, req.identity);
    requireServiceToken(parsed.kind === 'bind' ? 'Binding accelerator requests' : 'Unbinding accelerator requests', req.identity, deps.auth);
    const arqs = parsed.items.map((i) => {
      const v = visible(req, i.uuid);
      if (!v) throw notFound.arq(i.uuid);
      return v;
    });
    const meta = h.meta(req);
    if (parsed.kind === 'unbind') {
      // Unbinding what is not bound is a no-op, as in Cyborg.
      await Promise.all(arqs.filter((a) => a.state === ArqStates.Bound || a.state === ArqStates.BindFailed).map((a) => control.unbindArq(a.uuid, meta)));
      return;
    }
    const instance = parsed.items[0]!.binding.instanceUuid;
    if (control.listArqs({ instanceUuid: instance }).length > 0) {
      throw v2Error('request.invalid', `Couldn't apply patch. Reason: Instance ${instance} already has accelerator requests. Cannot bind additional ARQs.`);
    }
    for (const [i, a] of arqs.entries()) {
      if (a.state !== ArqStates.Initial && a.state !== ArqStates.Unbound) {
        // Cyborg's words, its list printed as Python prints one.
        throw v2Error('arq.bad_state', `Bad state: ${a.cyborgState} for ARQ: ${a.uuid}. Expected state(s): ['${ArqStates.Initial}', '${ArqStates.Unbound}']`);
      }
      const rp = parsed.items[i]!.binding.deviceRpUuid;
      if (!control.getAcceleratorByRp(rp)) throw v2Error('deployable.not_found', `Deployable not found with resource provider uuid=${rp}`, { rp });
    }
    await Promise.all(parsed.items.map((i) => control.bindArq(i.uuid, i.binding, meta)));
  };

  const patchSchema = (summary: string, body: typeof PatchMap | ReturnType<typeof Type.Union>, hide?: boolean) => ({
    tags: [TAG],
    summary,
    hide,
    body,
    response: { ...errors(400, 401, 403, 404, 406, 409) },
  });

  app.patch(
    '/accelerator_requests',
    { schema: patchSchema('Bind / unbind ARQs (Nova\'s form: {"<arq uuid>": [JSON-patch ops]})', PatchMap, deps.hide) },
    async (req, reply) => {
      await applyPatch(req, req.body as Record<string, PatchOpsT>);
      return empty(reply as FastifyReply, 202);
    },
  );

  app.patch(
    '/accelerator_requests/:uuid',
    {
      schema: {
        ...patchSchema("Bind / unbind one ARQ (the CLI's form: a list of ops, or the map)", Type.Union([PatchOps, PatchMap]), deps.hide),
        params: Type.Object({ uuid: UuidParam }),
      },
    },
    async (req, reply) => {
      const uuid = req.params.uuid;
      const body = req.body as PatchOpsT | Record<string, PatchOpsT>;
      const patch = Array.isArray(body) ? { [uuid]: body } : body;
      if (Object.keys(patch).some((k) => k !== uuid)) throw v2Error('request.invalid', `The patch of ARQ ${uuid} may only name that ARQ`);
      await applyPatch(req, patch);
      return empty(reply as FastifyReply, 202);
    },
  );

  const deleteByUuids = async (req: FastifyRequest, uuids: string[]): Promise<void> => {
    const found = uuids.map((u) => visible(req, u)).filter((v): v is ArqView => v !== undefined);
    if (found.some((a) => a.binding?.instanceUuid)) requireServiceToken('Deleting bound accelerator requests', req.identity, deps.auth);
    const meta = h.meta(req);
    await Promise.all(found.map((a) => control.deleteArq(a.uuid, meta)));
    const missing = uuids.filter((u) => !found.some((a) => a.uuid === u));
    if (missing.length > 0) throw v2Error('arq.not_found', `ARQ not found with uuids [${missing.map((m) => `'${m}'`).join(', ')}]`, { missing });
  };

  app.delete(
    '/accelerator_requests',
    {
      schema: {
        tags: [TAG],
        summary: 'Delete ARQs by instance (idempotent) or by uuids',
        hide: deps.hide,
        querystring: Type.Object({ arqs: Type.Optional(Text(MAX.list)), instance: Type.Optional(Text(MAX.name)) }),
        response: { ...errors(400, 401, 403, 404, 406, 409) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:arq:delete');
      const { arqs, instance } = req.query;
      if ((arqs === undefined) === (instance === undefined)) throw v2Error('request.invalid', 'Provide either an ARQ uuid list or an instance UUID');
      if (instance !== undefined) {
        requireServiceToken('Deleting accelerator requests by instance', req.identity, deps.auth);
        const meta = h.meta(req);
        await Promise.all(control.listArqs({ instanceUuid: instance, projectId: h.projectScope(req) }).map((a) => control.deleteArq(a.uuid, meta)));
      } else {
        const uuids = csv(arqs);
        if (uuids.length === 0) throw v2Error('request.invalid', 'Provide either an ARQ uuid list or an instance UUID');
        await deleteByUuids(req, uuids);
      }
      return empty(reply as FastifyReply, 204);
    },
  );

  app.delete(
    '/accelerator_requests/:uuid',
    {
      schema: {
        tags: [TAG],
        summary: "Delete one ARQ (the CLI's form)",
        hide: deps.hide,
        params: Type.Object({ uuid: Text(MAX.list, { minLength: 1, description: 'a uuid, or several comma-separated' }) }),
        response: { ...errors(400, 401, 403, 404, 406, 409) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:arq:delete');
      await deleteByUuids(req, csv(req.params.uuid));
      return empty(reply as FastifyReply, 204);
    },
  );
};
