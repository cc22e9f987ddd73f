import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CyborgError, DriverError } from '../../errors/index.js';
import type { AcceleratorView, ControlPlane, DrainView, RequestMeta } from '../../model/index.js';
import { policy } from '../auth/index.js';
import { Name } from '../bounds.js';
import { AcceleratorSchema, meta } from './accelerators.js';
import { ErrorSchema, Uuid } from './shared.js';
import { AcceleratorStates } from '../../machines/index.js';
import type { RouteScope } from '../plugin.js';

const Params = Type.Object({ id: Uuid });
const HostParams = Type.Object({ host: Name() });
const Empty = Type.Object({}, { additionalProperties: false });
const responses = { 200: AcceleratorSchema, 400: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema, 502: ErrorSchema, 503: ErrorSchema, 504: ErrorSchema };

/** A host's drain: each device's mark, and whether the drain is finished (no consumer left). */
export const DrainSchema = Type.Object({
  host: Type.String(),
  state: Type.Union([Type.Literal('draining'), Type.Literal('drained'), Type.Literal('none')], { description: 'none: not being drained' }),
  accelerators: Type.Array(AcceleratorSchema),
});
export type { DrainView } from '../../model/index.js';

function postAcceleratorsReset(app: RouteScope, { control }: { control: ControlPlane }): void {
  app.post(
    '/accelerators/:id/reset',
    {
      onRequest: policy('cyborg:operator:accelerator:reset'),
      schema: {
        tags: ['operator'],
        summary: 'Reset the device (driver reset where it has one) and clear its health: ready/programmed only',
        params: Params,
        body: Empty,
        response: responses,
      },
    },
    async (req) => {
      const view = await control.act(req.params.id, { type: 'RESET' }, meta(req));
      if (view.state === AcceleratorStates.error && view.error?.op === 'reset') {
        throw new DriverError('driver.failed', `driver reset failed on ${view.host}: ${view.error.reason}`, { accelerator: view });
      }
      return view;
    },
  );
}

function postAcceleratorsClearHealth(app: RouteScope, { control }: { control: ControlPlane }): void {
  app.post(
    '/accelerators/:id/clear-health',
    {
      onRequest: policy('cyborg:operator:accelerator:clear_health'),
      schema: {
        tags: ['operator'],
        summary: 'Forget a health fault (a fatal one included) and return the device to service',
        params: Params,
        body: Empty,
        response: responses,
      },
    },
    async (req) => control.act(req.params.id, { type: 'CLEAR_HEALTH' }, meta(req)),
  );
}

function postAcceleratorsMaintenance(app: RouteScope, { control }: { control: ControlPlane }): void {
  app.post(
    '/accelerators/:id/maintenance',
    {
      onRequest: policy('cyborg:operator:accelerator:maintenance'),
      schema: {
        tags: ['operator'],
        summary: 'Mark for maintenance: no new binds, reserved in Placement, instances keep running (draining → maintenance)',
        params: Params,
        body: Empty,
        response: responses,
      },
    },
    async (req) => control.act(req.params.id, { type: 'MAINTAIN', scope: 'device' }, meta(req)),
  );
}

function deleteAcceleratorsMaintenance(app: RouteScope, { control }: { control: ControlPlane }): void {
  app.delete(
    '/accelerators/:id/maintenance',
    {
      onRequest: policy('cyborg:operator:accelerator:maintenance_cancel'),
      schema: { tags: ['operator'], summary: "Cancel the device's maintenance mark (409 if it has none)", params: Params, response: responses },
    },
    async (req) => {
      const view = control.getAccelerator(req.params.id);
      if (!view.maintenance?.scopes.includes('device')) {
        throw new CyborgError(
          'maintenance.not_marked',
          `accelerator ${view.id} has no maintenance mark of its own${view.maintenance ? ' (its host is being drained: cancel the drain)' : ''}`,
          { id: view.id },
        );
      }
      return control.act(view.id, { type: 'END_MAINTENANCE', scope: 'device' }, meta(req));
    },
  );
}

function postHostsDrain(app: RouteScope, { control }: { control: ControlPlane }): void {
  app.post(
    '/hosts/:host/drain',
    {
      onRequest: policy('cyborg:operator:host:drain'),
      schema: {
        tags: ['operator'],
        summary: 'Drain a host: mark every device of it for maintenance',
        params: HostParams,
        body: Empty,
        response: { 200: DrainSchema, 400: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema, 503: ErrorSchema },
      },
    },
    async (req) => drain(control, req.params.host, true, meta(req)),
  );
}

function getHostsDrain(app: RouteScope, { control }: { control: ControlPlane }): void {
  app.get(
    '/hosts/:host/drain',
    {
      onRequest: policy('cyborg:operator:host:get'),
      schema: {
        tags: ['operator'],
        summary: "A host's drain: each device's mark and its remaining consumers",
        params: HostParams,
        response: { 200: DrainSchema, 404: ErrorSchema },
      },
    },
    async (req) => {
      control.getHost(req.params.host);
      return drainView(req.params.host, control.listAccelerators({ host: req.params.host }));
    },
  );
}

function deleteHostsDrain(app: RouteScope, { control }: { control: ControlPlane }): void {
  app.delete(
    '/hosts/:host/drain',
    {
      onRequest: policy('cyborg:operator:host:drain_cancel'),
      schema: {
        tags: ['operator'],
        summary: "Cancel a host's drain (409 if it is not draining); devices' own marks stay",
        params: HostParams,
        response: { 200: DrainSchema, 404: ErrorSchema, 409: ErrorSchema, 503: ErrorSchema },
      },
    },
    async (req) => drain(control, req.params.host, false, meta(req)),
  );
}

/**
 * Health and maintenance actions.
 *
 * - `reset` runs the driver's reset (where the driver has one) on a device no instance holds,
 *   then clears its health; `clear-health` forgets a fault without touching the device.
 * - `maintenance` marks a device: no new binds, its Placement inventory reserved, attached
 *   instances left running; `DELETE` cancels it. Marking twice is an idempotent 200; cancelling
 *   a mark that is not there is 409 `maintenance.not_marked`.
 * - `hosts/:host/drain` marks every device of the host the same way (a device's own mark is kept
 *   apart, so cancelling the drain never cancels it); an unknown host is 404.
 */
export const maintenanceRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane }> = async (app, opts) => {
  postAcceleratorsReset(app, opts);
  postAcceleratorsClearHealth(app, opts);
  postAcceleratorsMaintenance(app, opts);
  deleteAcceleratorsMaintenance(app, opts);
  postHostsDrain(app, opts);
  getHostsDrain(app, opts);
  deleteHostsDrain(app, opts);
};

/** Sets (or cancels) the host scope of every device of `host`: all marks are sent before any is awaited. */
async function drain(control: ControlPlane, host: string, on: boolean, m: RequestMeta): Promise<DrainView> {
  control.getHost(host); // 404 for a host nobody knows
  const accs = control.listAccelerators({ host }).filter((a) => a.state !== AcceleratorStates.removed);
  const todo = accs.filter((a) => (a.maintenance?.scopes.includes('host') ?? false) !== on);
  if (!on && todo.length === 0) {
    throw new CyborgError('maintenance.not_marked', `host ${host} is not being drained`, { host });
  }
  const done = await Promise.all(todo.map((a) => control.act(a.id, on ? { type: 'MAINTAIN', scope: 'host' } : { type: 'END_MAINTENANCE', scope: 'host' }, m)));
  const byId = new Map(done.map((v) => [v.id, v]));
  const views = accs.map((a) => byId.get(a.id) ?? a);
  return on ? drainView(host, views) : { host, state: 'none', accelerators: views };
}

function drainView(host: string, accs: AcceleratorView[]): DrainView {
  const marked = accs.filter((a) => a.maintenance?.scopes.includes('host'));
  const state = marked.length === 0 ? 'none' : marked.some((a) => a.maintenance?.mark === 'draining') ? 'draining' : 'drained';
  return { host, state, accelerators: accs };
}
