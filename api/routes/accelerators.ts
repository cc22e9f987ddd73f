import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import { CyborgError, DriverError } from '../../errors/index.js';
import type { DriverOp } from '../../machines/index.js';
import { ErrorSchema, Uuid } from './shared.js';
import {
  AcceleratorViewSchema,
  type AcceleratorView,
  type ControlPlane,
  type OperatorEvent,
  type PlacementStatusView,
  type RequestMeta,
} from '../../model/index.js';
import { MAX, Name, Text } from '../bounds.js';
import { requestMeta } from '../request-meta.js';
import { policy } from '../auth/index.js';
import { NextLink, page, pageBody, PageQuery } from '../paging.js';
import { acceptedIfUnderWay, resourceOf } from './accepted.js';
import { apiLimits } from '../limits.js';
import { AcceleratorStates } from '../../machines/index.js';
import type { RouteScope } from '../plugin.js';
import { withProjectNames } from '../names.js';

/** Whether Placement holds what this accelerator is (docs/placement.md). */
const PlacementSyncSchema = Type.Object({
  status: Type.Union([Type.Literal('in_sync'), Type.Literal('pending'), Type.Literal('error')]),
  reason: Type.Union([Type.String(), Type.Null()]),
  flags: Type.Array(Type.Object({ code: Type.String(), message: Type.String() }), { description: 'what was kept to protect allocations' }),
  generation: Type.Union([Type.Integer(), Type.Null()], { description: 'the resource provider generation last seen' }),
  syncedAt: Type.Union([Type.String(), Type.Null()]),
});

/** The committed view (model/) with what the conductor adds for operators: Placement's sync state. */
export const AcceleratorSchema = Type.Composite([AcceleratorViewSchema, Type.Object({ placement: Type.Optional(PlacementSyncSchema) })]);

const Params = Type.Object({ id: Uuid });
const Empty = Type.Object({}, { additionalProperties: false });
const ProgramBody = Type.Object(
  {
    bitstreamId: Type.Optional(Name({ description: 'the Glance image to load; exactly one of bitstreamId and functionId' })),
    functionId: Type.Optional(Name({ description: 'the function whose Glance image to load; exactly one of bitstreamId and functionId' })),
  },
  { additionalProperties: false },
);

/**
 * A programming names one image: the agent looks it up in Glance by bitstream or by function
 * (actors/agent/programming.ts), and the generic driver refuses one with neither. With neither
 * the machine would go programming for nothing; with both, which one wins is a guess (a device
 * profile that sets both is refused the same way: actors/conductor/arq-binder.ts).
 */
function checkProgramBody(body: Static<typeof ProgramBody>): void {
  const given = (['bitstreamId', 'functionId'] as const).filter((k) => body[k] !== undefined);
  if (given.length === 1) return;
  throw new CyborgError(
    'request.invalid',
    given.length === 0
      ? 'say what to program: bitstreamId (a Glance image id) or functionId'
      : 'give bitstreamId or functionId, not both: a programming loads one image',
    { field: given.length === 0 ? 'body/bitstreamId' : 'body/functionId', oneOf: ['bitstreamId', 'functionId'] },
  );
}
const AttachBody = Type.Object(
  {
    instanceUuid: Uuid,
    projectId: Type.Optional(Name()),
  },
  { additionalProperties: false },
);
const DetachBody = Type.Object(
  {
    handleUuid: Type.Optional(Uuid),
    instanceUuid: Type.Optional(Uuid),
  },
  { additionalProperties: false },
);

const actionResponses = {
  200: AcceleratorSchema,
  202: AcceleratorSchema,
  400: ErrorSchema,
  404: ErrorSchema,
  409: ErrorSchema,
  502: ErrorSchema,
  503: ErrorSchema,
  504: ErrorSchema,
};

/** What each simple action sends, and the driver operation that runs for it. */
const SIMPLE: Record<string, { event: OperatorEvent; op?: DriverOp; summary: string }> = {
  enable: { event: { type: 'ENABLE' }, op: 'install', summary: 'Set ready: inactive → installing → ready' },
  disable: { event: { type: 'DISABLE' }, op: 'uninstall', summary: 'Give back: ready/programmed → uninstalling → inactive' },
  retry: { event: { type: 'RETRY' }, summary: 'Retry the operation that failed (from error)' },
  remove: { event: { type: 'REMOVE' }, summary: 'Remove (never while attached)' },
};

/** What the routes of acceleratorRoutes share, built once per registration. */
function acceleratorContext({ control, pageMax = apiLimits().pageMax }: { control: ControlPlane; pageMax?: number }) {
  return { control, pageMax };
}

type AcceleratorContext = ReturnType<typeof acceleratorContext>;

function getAccelerators(app: RouteScope, { control, pageMax }: AcceleratorContext): void {
  app.get(
    '/accelerators',
    {
      onRequest: policy('cyborg:operator:accelerator:get'),
      schema: {
        tags: ['operator'],
        summary: 'List accelerators with their state (paged: limit, marker = the last id)',
        querystring: Type.Object(
          {
            host: Type.Optional(Text(MAX.name)),
            state: Type.Optional(Text(64)),
            type: Type.Optional(Text(16)),
            ...PageQuery,
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ accelerators: Type.Array(AcceleratorSchema), next: NextLink }), 400: ErrorSchema },
      },
    },
    async (req) => {
      const { limit, marker, ...filter } = req.query;
      const p = page(control.listAccelerators(filter), { limit, marker }, (v) => v.id, pageMax);
      const named = await withProjectNames(req, p.items);
      return pageBody('accelerators', { ...p, items: named.map((v) => withPlacement(control, v)) }, req.url);
    },
  );
}

function getAcceleratorsOne(app: RouteScope, { control }: AcceleratorContext): void {
  app.get(
    '/accelerators/:id',
    {
      onRequest: policy('cyborg:operator:accelerator:get'),
      schema: { tags: ['operator'], summary: 'One accelerator', params: Params, response: { 200: AcceleratorSchema, 400: ErrorSchema, 404: ErrorSchema } },
    },
    async (req) => withPlacement(control, (await withProjectNames(req, [control.getAccelerator(req.params.id)]))[0]!),
  );
}

function postAcceleratorsProgram(app: RouteScope, { control }: AcceleratorContext): void {
  app.post(
    '/accelerators/:id/program',
    {
      onRequest: policy('cyborg:operator:accelerator:program'),
      schema: {
        tags: ['operator'],
        summary: 'Program a bitstream or a function (exactly one): ready/programmed → programming → programmed',
        params: Params,
        body: ProgramBody,
        response: actionResponses,
      },
    },
    async (req, reply) => {
      const body = req.body as Static<typeof ProgramBody>;
      checkProgramBody(body);
      return acceptedIfUnderWay(req, reply, failed(await control.act(req.params.id, { type: 'PROGRAM', ...body }, meta(req)), 'program'), resourceOf(req));
    },
  );
}

function postAcceleratorsAttach(app: RouteScope, { control }: AcceleratorContext): void {
  app.post(
    '/accelerators/:id/attach',
    {
      onRequest: policy('cyborg:operator:accelerator:attach'),
      schema: {
        tags: ['operator'],
        summary: 'Attach an instance to the first free attach handle',
        params: Params,
        body: AttachBody,
        response: actionResponses,
      },
    },
    async (req) => {
      const before = control.getAccelerator(req.params.id).allocations.length;
      const view = await control.attach(req.params.id, req.body, meta(req));
      if (view.allocations.length <= before && view.error?.op === 'attach') throw driverFailed(view);
      return view;
    },
  );
}

function postAcceleratorsDetach(app: RouteScope, { control }: AcceleratorContext): void {
  app.post(
    '/accelerators/:id/detach',
    {
      onRequest: policy('cyborg:operator:accelerator:detach'),
      schema: {
        tags: ['operator'],
        summary: 'Detach an instance (by handle or instance; the first one if neither)',
        params: Params,
        body: DetachBody,
        response: actionResponses,
      },
    },
    async (req) => failed(await control.detach(req.params.id, req.body, meta(req)), 'detach'),
  );
}

/** `POST /accelerators/:id/<action>` for each action that is one event (SIMPLE). */
function postAcceleratorActions(app: RouteScope, { control }: AcceleratorContext): void {
  for (const [action, spec] of Object.entries(SIMPLE)) {
    app.post(
      `/accelerators/:id/${action}`,
      {
        onRequest: policy(`cyborg:operator:accelerator:${action}`),
        schema: { tags: ['operator'], summary: spec.summary, params: Params, body: Empty, response: actionResponses },
      },
      async (req, reply) => acceptedIfUnderWay(req, reply, failed(await control.act(req.params.id, spec.event, meta(req)), spec.op), resourceOf(req)),
    );
  }
}

/**
 * Operator actions on one accelerator. Each answers with the committed view once the driver
 * operation has finished; 409 names the current state and the allowed events; a driver failure
 * is 502 with the driver's reason and the accelerator (now in `error`).
 */
export const acceleratorRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane; pageMax?: number }> = async (app, opts) => {
  const ctx = acceleratorContext(opts);
  getAccelerators(app, ctx);
  getAcceleratorsOne(app, ctx);
  postAcceleratorActions(app, ctx);
  postAcceleratorsProgram(app, ctx);
  postAcceleratorsAttach(app, ctx);
  postAcceleratorsDetach(app, ctx);
};

/** Adds the Placement sync state where a sync runs. */
function withPlacement(control: ControlPlane, view: AcceleratorView): AcceleratorView & { placement?: PlacementStatusView } {
  const placement = control.placementStatus?.(view.id);
  return placement ? { ...view, placement } : view;
}

/** Who asked and under which request id: what every transition record carries. */
/** The request's id and caller, for the transition log (api/request-meta.ts). */
export function meta(req: Parameters<typeof requestMeta>[0]): RequestMeta {
  return requestMeta(req);
}

function failed(view: AcceleratorView, op?: DriverOp): AcceleratorView {
  if (op && view.state === AcceleratorStates.error && view.error?.op === op) throw driverFailed(view);
  return view;
}

/** How the machine (`recordTimeout`) and the host actor word an agent that did not answer by the deadline. */
const NO_ANSWER = /timed out$|did not answer .* in time/;

function driverFailed(view: AcceleratorView): DriverError {
  const reason = view.error?.reason ?? 'unknown reason';
  // No answer by the deadline is "not done, try again" (503 + Retry-After), not a driver's failure.
  const code = NO_ANSWER.test(reason) ? 'driver.timeout' : 'driver.failed';
  return new DriverError(code, `driver ${view.error?.op ?? 'operation'} failed on ${view.host}: ${reason}`, { accelerator: view });
}
