import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { gzipSync } from 'node:zlib';
import type { DeviceEntry } from './catalogue.js';
import { empty, helpers, type V2Deps } from './context.js';
import { checkUuid, notFound } from './errors.js';
import { selfLink, ts } from './format.js';
import { atLeast } from './microversion.js';
import { errors, IgnoredFilters, Links, NullableTimestamp, TAG, Timestamp, UuidParam } from './schemas.js';
import type { DeviceT } from '../../model/index.js';
import { MAX, Text } from '../bounds.js';
import { AcceleratorStates } from '../../machines/index.js';
import type { RouteScope } from '../plugin.js';

export const DeviceSchema = Type.Object({
  uuid: Type.String(),
  type: Type.String({ description: 'GPU | FPGA | AICHIP | QAT | NIC | SSD' }),
  vendor: Type.String(),
  model: Type.String(),
  std_board_info: Type.String({ description: 'JSON text' }),
  vendor_board_info: Type.String(),
  hostname: Type.String(),
  status: Type.Optional(
    Type.String({ description: 'enabled (can take an ARQ now) | maintaining (disabled, or no accelerator installed yet); only at microversion >= 2.3' }),
  ),
  links: Links,
  created_at: Timestamp,
  updated_at: NullableTimestamp,
});

const ListQuery = Type.Object({
  type: Type.Optional(Text(16)),
  vendor: Type.Optional(Text(MAX.name)),
  hostname: Type.Optional(Text(MAX.name)),
  filters: IgnoredFilters,
});

type Device = Static<typeof DeviceSchema>;

interface ListCache {
  key: string;
  inventories: DeviceT[][];
  statusGeneration: number;
  /** Each device's reported status in list order (accelerator states move without a new inventory). */
  statuses: string;
  /** Encoded once: re-encoding a large list on every request costs more than building it. */
  body: Buffer;
  /** The same, gzipped on first demand (python-requests, hence Nova and the CLI, accept gzip). */
  gzipped?: Buffer;
}

/** What the routes of deviceRoutes share, built once per registration. */
function deviceContext(deps: V2Deps) {
  const h = helpers(deps);
  const { catalogue, control } = deps;
  const inService = (uuid: string): boolean => {
    const tags = catalogue.view(uuid)?.tags;
    return Boolean(tags?.includes('usable') && !tags.includes('reserved'));
  };
  const status = (d: DeviceT): 'enabled' | 'maintaining' =>
    control.documents.deviceStatus(d.uuid) === 'enabled' && d.deployables.some((dep) => inService(dep.uuid)) ? 'enabled' : 'maintaining';
  const serialize = (e: DeviceEntry, base: string, withStatus: boolean): Device => {
    const d = e.device;
    const out: Device = {
      uuid: d.uuid,
      type: d.type,
      vendor: d.vendor,
      model: d.model,
      std_board_info: d.stdBoardInfo,
      vendor_board_info: d.vendorBoardInfo,
      hostname: e.host,
      links: selfLink(base, 'devices', d.uuid),
      created_at: ts(catalogue.createdAt(d.uuid)),
      updated_at: null,
    };
    if (withStatus) out.status = status(d);
    return out;
  };
  const build = (
    inventories: ReturnType<typeof catalogue.inventories>,
    base: string,
    withStatus: boolean,
    q: { type?: string; vendor?: string; hostname?: string },
  ): Buffer => {
    const { type, vendor, hostname } = q;
    const devices = inventories
      .flatMap(({ host, devices: ds }) => ds.filter((d) => !d.stub).map((device) => ({ host, device })))
      .filter(
        (e) =>
          (type === undefined || e.device.type === type) &&
          (vendor === undefined || e.device.vendor === vendor) &&
          (hostname === undefined || e.host === hostname),
      )
      .map((e) => serialize(e, base, withStatus));
    return Buffer.from(JSON.stringify({ devices }));
  };
  const find = (uuid: string): DeviceEntry => {
    const e = catalogue.device(checkUuid(uuid));
    if (!e) throw notFound.device(uuid);
    return e;
  };
  return { deps, h, catalogue, control, inService, status, serialize, build, find };
}

type DeviceContext = ReturnType<typeof deviceContext>;

function getDevices(app: RouteScope, { deps, h, catalogue, control, status, build }: DeviceContext): void {
  // The last list answered, per registration: a repeated GET of an unchanged fleet is not built again.
  let cache: ListCache | undefined;
  app.get(
    '/devices',
    {
      schema: {
        tags: [TAG],
        summary: 'List devices',
        hide: deps.hide,
        querystring: ListQuery,
        response: { 200: Type.Object({ devices: Type.Array(DeviceSchema) }), ...errors(400, 401, 403, 406) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:device:get_all');
      const withStatus = atLeast(req.microversion, 3);
      const base = h.base(req);
      const { type, vendor, hostname } = req.query;
      // A device list of a large fleet is big and rarely changes: serve the same bytes until an
      // inventory or a device status changes (inventory arrays are replaced, never mutated).
      const inventories = catalogue.inventories();
      const key = `${withStatus}|${base}|${type ?? ''}|${vendor ?? ''}|${hostname ?? ''}`;
      const gen = control.documents.statusGeneration;
      const statuses = withStatus ? inventories.map((i) => i.devices.map((d) => (d.stub ? '' : status(d)[0])).join('')).join('|') : '';
      if (
        !(
          cache &&
          cache.key === key &&
          cache.statusGeneration === gen &&
          cache.statuses === statuses &&
          cache.inventories.length === inventories.length &&
          cache.inventories.every((inv, i) => inv === inventories[i]!.devices)
        )
      ) {
        cache = { key, inventories: inventories.map((i) => i.devices), statusGeneration: gen, statuses, body: build(inventories, base, withStatus, req.query) };
      }
      reply.type('application/json').header('vary', 'OpenStack-API-Version, Accept-Encoding');
      if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) {
        cache.gzipped ??= gzipSync(cache.body, { level: 6 });
        return reply.header('content-encoding', 'gzip').send(cache.gzipped as never); // pre-serialized bytes
      }
      return reply.send(cache.body as never);
    },
  );
}

function getDevicesOne(app: RouteScope, { deps, h, serialize, find }: DeviceContext): void {
  app.get(
    '/devices/:uuid',
    {
      schema: {
        tags: [TAG],
        summary: 'Show one device',
        hide: deps.hide,
        params: Type.Object({ uuid: UuidParam }),
        response: { 200: DeviceSchema, ...errors(400, 401, 403, 404, 406) },
      },
    },
    async (req) => {
      h.authorize(req, 'cyborg:device:get_one');
      return serialize(find(req.params.uuid), h.base(req), atLeast(req.microversion, 3));
    },
  );
}

function postDevicesEnable(app: RouteScope, { deps, h, catalogue, control, status, find }: DeviceContext): void {
  app.post(
    '/devices/:uuid/enable',
    {
      schema: {
        tags: [TAG],
        summary: 'Enable a device (status enabled; installs its inactive accelerators)',
        hide: deps.hide,
        params: Type.Object({ uuid: UuidParam }),
        response: { ...errors(400, 401, 403, 404, 406, 409) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:device:enable');
      const e = find(req.params.uuid);
      await control.documents.setDeviceStatus(e.device.uuid, 'enabled');
      for (const dep of e.device.deployables) {
        const view = catalogue.view(dep.uuid);
        // Undoes `disable`: its maintenance mark goes, and Placement frees the inventory.
        if (view?.maintenance?.scopes.includes('device')) await control.act(dep.uuid, { type: 'END_MAINTENANCE', scope: 'device' }, h.meta(req));
        if (view?.state === AcceleratorStates.inactive) await control.act(dep.uuid, { type: 'ENABLE' }, h.meta(req));
      }
      return empty(reply as FastifyReply, 200);
    },
  );
}

function postDevicesDisable(app: RouteScope, { deps, h, catalogue, control, status, find }: DeviceContext): void {
  app.post(
    '/devices/:uuid/disable',
    {
      schema: {
        tags: [TAG],
        summary:
          'Disable a device (status maintaining; its accelerators marked for maintenance: reserved in Placement, no new binds; running instances keep it)',
        hide: deps.hide,
        params: Type.Object({ uuid: UuidParam }),
        response: { ...errors(400, 401, 403, 404, 406) },
      },
    },
    async (req, reply) => {
      h.authorize(req, 'cyborg:device:disable');
      const e = find(req.params.uuid);
      await control.documents.setDeviceStatus(e.device.uuid, 'maintaining');
      // Cyborg's disable takes the device out of service: each accelerator gets the device's
      // maintenance mark, so its inventory is reserved in Placement and a bind on it fails naming
      // the mark; the instances on it keep running.
      for (const dep of e.device.deployables) {
        const view = catalogue.view(dep.uuid);
        if (view && view.state !== AcceleratorStates.removed && !view.maintenance?.scopes.includes('device'))
          await control.act(dep.uuid, { type: 'MAINTAIN', scope: 'device' }, h.meta(req));
      }
      return empty(reply as FastifyReply, 200);
    },
  );
}

/**
 * `/v2/devices`: list (filters `type`, `vendor`, `hostname`), show, and enable / disable
 * (Cyborg's maintenance flag; `enable` also installs the device's inactive accelerators so that
 * `openstack accelerator device enable` makes it schedulable here).
 */
export const deviceRoutes: FastifyPluginAsyncTypebox<V2Deps> = async (app, deps) => {
  const ctx = deviceContext(deps);
  getDevices(app, ctx);
  getDevicesOne(app, ctx);
  postDevicesEnable(app, ctx);
  postDevicesDisable(app, ctx);
};
