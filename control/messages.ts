import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { firstError } from '../bus/index.js';
import { BusError, CyborgError } from '../errors/index.js';
import {
  AcceleratorUsageSchema,
  AcceleratorViewSchema,
  ArqHoldSchema,
  ArqViewSchema,
  AttachRequestSchema,
  AuditPageSchema,
  AuditQuerySchema,
  AttachResultSchema,
  AttributeDocSchema,
  BindingSchema,
  BoundToSchema,
  DetachResultSchema,
  Device,
  DeviceProfileDocSchema,
  DeviceStatusSchema,
  DiscoverResultSchema,
  DriverViewSchema,
  HostUsageSchema,
  HostViewSchema,
  RelayoutRequestSchema,
  OperatorEventSchema,
  RequestMetaSchema,
  ServiceViewSchema,
  TransitionEvent,
  TransitionRecordSchema,
} from '../model/index.js';

/**
 * The api ↔ conductor protocol (`cyborg.conductor.api`, `cyborg.conductor.<id>.api`,
 * `cyborg.views`). An api process is a thin client: it calls ControlPlane methods by name, each
 * with its arguments by name, and keeps a read model of the committed views the conductors
 * publish after each commit. Every call has one schema for its arguments and one for its
 * reply: the conductor checks the arguments on receipt, the client checks the reply.
 */

const Meta = RequestMetaSchema;

/** At most this many ARQs per `arqHolds` call (the sweep asks in pages of it). */
export const ARQ_HOLDS_MAX = 500;

const Id = Type.String({ minLength: 1 });
const Nothing = Type.Null();

/** Where a snapshot page starts: a part of the state, after the last key the previous page held. */
export const SnapshotCursor = Type.Object({
  part: Type.Union([Type.Literal('hosts'), Type.Literal('arqs'), Type.Literal('documents')]),
  after: Type.Union([Type.String(), Type.Null()]),
});

/**
 * One page of a conductor's committed state: hosts by name (each with its inventory and
 * accelerators), then ARQs by uuid, then documents, cut so that a page stays under the bus's
 * payload limit. Keys, not offsets, mark where the next page starts, so that a host or an ARQ
 * added meanwhile shifts nothing; what changed meanwhile comes in the views messages numbered
 * after `seq`, which the reader applies on top.
 */
export const SnapshotPage = Type.Object({
  conductorId: Type.String(),
  /** This conductor process's incarnation: a restarted conductor numbers its views from 1 again. */
  epoch: Type.String(),
  /** The last views message this conductor had published when it cut this page. */
  seq: Type.Integer({ minimum: 0 }),
  conductors: Type.Array(Type.String()),
  hosts: Type.Array(Type.Object({ view: HostViewSchema, inventory: Type.Array(Device) })),
  accelerators: Type.Array(AcceleratorViewSchema),
  arqs: Type.Array(ArqViewSchema),
  documents: Type.Array(Type.Object({ collection: Type.String(), id: Type.String(), body: Type.Record(Type.String(), Type.Unknown()) })),
  next: Type.Union([SnapshotCursor, Type.Null()]),
});

const call = <A extends TSchema, R extends TSchema>(args: A, reply: R): { args: A; reply: R } => ({ args, reply });

/** Every call an api process (or another conductor) may make, by name: its arguments and its reply. */
export const ControlCalls = {
  /** `maxBytes`: the reader's own payload limit; the page stays under it and under the conductor's. */
  snapshot: call(Type.Object({ cursor: Type.Optional(SnapshotCursor), maxBytes: Type.Optional(Type.Integer({ minimum: 16_384 })) }), SnapshotPage),
  history: call(Type.Object({ id: Id, limit: Type.Optional(Type.Integer({ minimum: 1 })) }), Type.Array(TransitionRecordSchema)),
  /** Any conductor answers: the log is the shared database's. */
  audit: call(Type.Object({ q: AuditQuerySchema }), AuditPageSchema),
  act: call(Type.Object({ id: Id, event: OperatorEventSchema, meta: Meta }), AcceleratorViewSchema),
  attach: call(
    Type.Object({ id: Id, req: Type.Object({ instanceUuid: Type.String(), projectId: Type.Optional(Type.String()) }), meta: Meta }),
    AcceleratorViewSchema,
  ),
  detach: call(
    Type.Object({ id: Id, req: Type.Object({ handleUuid: Type.Optional(Type.String()), instanceUuid: Type.Optional(Type.String()) }), meta: Meta }),
    AcceleratorViewSchema,
  ),
  createArq: call(
    Type.Object({
      req: Type.Object({
        deviceProfileName: Type.String(),
        deviceProfileGroupId: Type.Integer({ minimum: 0 }),
        projectId: Type.Union([Type.String(), Type.Null()]),
      }),
      meta: Meta,
    }),
    ArqViewSchema,
  ),
  bindArq: call(Type.Object({ uuid: Id, binding: BindingSchema, meta: Meta }), ArqViewSchema),
  unbindArq: call(Type.Object({ uuid: Id, meta: Meta }), ArqViewSchema),
  deleteArq: call(Type.Object({ uuid: Id, meta: Meta }), ArqViewSchema),
  'documents.createProfile': call(Type.Object({ doc: DeviceProfileDocSchema }), DeviceProfileDocSchema),
  'documents.deleteProfile': call(Type.Object({ uuid: Id }), Nothing),
  'documents.createAttribute': call(Type.Object({ doc: AttributeDocSchema }), AttributeDocSchema),
  'documents.deleteAttribute': call(Type.Object({ uuid: Id }), Nothing),
  'documents.setDeviceStatus': call(Type.Object({ uuid: Id, status: DeviceStatusSchema }), Nothing),
  // Driver administration (the generic-driver spec's commands; control/driver-client.ts).
  'drivers.list': call(Type.Object({ filter: Type.Object({ host: Type.Optional(Type.String()) }) }), Type.Array(DriverViewSchema)),
  'drivers.get': call(Type.Object({ ref: Id, host: Type.Optional(Type.String()) }), DriverViewSchema),
  'drivers.install': call(
    Type.Object({ ref: Id, opts: Type.Object({ host: Type.Optional(Type.String()), version: Type.Optional(Type.String()) }), meta: Meta }),
    DriverViewSchema,
  ),
  'drivers.uninstall': call(Type.Object({ ref: Id, opts: Type.Object({ host: Type.Optional(Type.String()) }), meta: Meta }), DriverViewSchema),
  'drivers.update': call(
    Type.Object({
      ref: Id,
      opts: Type.Object({ host: Type.Optional(Type.String()), version: Type.Optional(Type.String()), force: Type.Optional(Type.Boolean()) }),
      meta: Meta,
    }),
    DriverViewSchema,
  ),
  'services.list': call(
    Type.Object({ filter: Type.Object({ host: Type.Optional(Type.String()), driver: Type.Optional(Type.String()) }) }),
    Type.Array(ServiceViewSchema),
  ),
  'services.discover': call(Type.Object({ opts: Type.Object({ host: Type.Optional(Type.String()) }), meta: Meta }), DiscoverResultSchema),
  'instances.attach': call(Type.Object({ instanceUuid: Id, req: AttachRequestSchema, meta: Meta }), AttachResultSchema),
  'instances.detach': call(Type.Object({ instanceUuid: Id, meta: Meta }), DetachResultSchema),
  // Conductor to conductor: the ARQ home's bind effects, run where the accelerator is (control/arq-ops.ts).
  arqAttach: call(Type.Object({ arqUuid: Id, binding: BindingSchema }), BoundToSchema),
  arqRelease: call(Type.Object({ arqUuid: Id, boundTo: Type.Union([BoundToSchema, Type.Null()]), asOwner: Type.Boolean() }), Type.Boolean()),
  // Conductor to the ARQ home: which of these ARQs exist, in what state and bound where (the sweep
  // of allocations whose ARQ is gone asks before it releases anything).
  relayout: call(Type.Object({ host: Id, req: RelayoutRequestSchema, meta: Meta }), Type.Array(AcceleratorViewSchema)),
  // Usage windows live on the conductor that holds the host (the call is routed there).
  'usage.accelerator': call(Type.Object({ id: Id }), AcceleratorUsageSchema),
  'usage.host': call(Type.Object({ host: Id }), HostUsageSchema),
  // Whether the conductor can write (its database answers): the api's `/readyz` asks it.
  readiness: call(
    Type.Object({}),
    Type.Object({ conductorId: Type.String(), database: Type.String(), hosts: Type.Optional(Type.String({ maxLength: 1024 })) }),
  ),
  // The database's committed states as digests: the api's background check of its view (control/view-check.ts).
  digest: call(
    Type.Object({}),
    Type.Object({
      accelerators: Type.Object({ count: Type.Integer({ minimum: 0 }), buckets: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 256 }) }),
      arqs: Type.Object({ count: Type.Integer({ minimum: 0 }), buckets: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 256 }) }),
    }),
  ),
  // An operator retires a lost, empty host: served by its lease holder (actors/conductor/host-retire.ts).
  'hosts.retire': call(Type.Object({ host: Id, meta: Meta }), Type.Object({ host: Type.String(), accelerators: Type.Array(Type.String()) })),
  arqHolds: call(Type.Object({ uuids: Type.Array(Id, { maxItems: ARQ_HOLDS_MAX }) }), Type.Record(Type.String(), Type.Union([ArqHoldSchema, Type.Null()]))),
  // Conductor to the ARQ home: an operator released this ARQ's instance from its card (RELEASE).
  arqReleased: call(Type.Object({ arqUuid: Id, reason: Type.String({ maxLength: 1024 }), meta: Meta }), Type.Boolean()),
};

export type ControlOp = keyof typeof ControlCalls;
export type ArgsOf<O extends ControlOp> = Static<(typeof ControlCalls)[O]['args']>;
export type ReplyOf<O extends ControlOp> = Static<(typeof ControlCalls)[O]['reply']>;

/** The envelope of a call; its `args` are checked against the call's own schema (`checkedCall`). */
export const ControlRequest = Type.Object({
  op: Type.String({ minLength: 1, maxLength: 64 }),
  args: Type.Unknown(),
  /** The host the call is about, when known: the conductor that hears it forwards it to the host's lease holder. */
  host: Type.Optional(Type.String()),
  /** Set once forwarded, so that a call is forwarded at most once while leases move. */
  forwarded: Type.Optional(Type.Boolean()),
});

export const ControlError = Type.Object({
  code: Type.String(),
  message: Type.String(),
  details: Type.Record(Type.String(), Type.Unknown()),
  state: Type.Optional(Type.String()),
  allowed: Type.Optional(Type.Array(Type.String())),
});

export const ControlReply = Type.Union([
  Type.Object({ ok: Type.Literal(true), result: Type.Unknown() }),
  Type.Object({ ok: Type.Literal(false), error: ControlError }),
]);

/**
 * Committed views in one message (views are replaced whole; `deleted` names what is gone).
 * Numbered per conductor incarnation: a reader applies message `seq` only right after `seq - 1`
 * of the same `epoch`, and rebuilds its view from a snapshot on any gap. A conductor with nothing
 * to say still sends an empty one every few seconds, so that a loss is noticed within that time.
 */
export const ViewsBatch = Type.Object({
  conductorId: Type.String({ minLength: 1 }),
  epoch: Type.String({ minLength: 1 }),
  seq: Type.Integer({ minimum: 1 }),
  hosts: Type.Array(Type.Object({ view: HostViewSchema, inventory: Type.Optional(Type.Array(Device)) })),
  accelerators: Type.Array(AcceleratorViewSchema),
  arqs: Type.Array(ArqViewSchema),
  documents: Type.Array(
    Type.Object({ collection: Type.String(), id: Type.String(), body: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]) }),
  ),
  /** Transitions committed with these views, applied after them (so a reader never sees an event before its view). */
  transitions: Type.Array(TransitionEvent),
  deleted: Type.Optional(Type.Object({ arqs: Type.Array(Type.String()), hosts: Type.Optional(Type.Array(Type.String())) })),
});

export type ControlRequestMsg = Static<typeof ControlRequest>;
export type ControlReplyMsg = Static<typeof ControlReply>;
export type ViewsBatchMsg = Static<typeof ViewsBatch>;
export type SnapshotPageMsg = Static<typeof SnapshotPage>;
export type SnapshotCursorMsg = Static<typeof SnapshotCursor>;

/** A typed call: one of `ControlCalls` with arguments that match its schema. */
export type CheckedCall = { [O in ControlOp]: { op: O; args: ArgsOf<O> } }[ControlOp];

function isOp(op: string): op is ControlOp {
  return Object.hasOwn(ControlCalls, op);
}

/**
 * The call a request names, with its arguments checked: an unknown call or arguments out of
 * schema are refused with `request.invalid` (a 4xx: the caller's fault), naming what is wrong.
 */
export function checkedCall(req: Pick<ControlRequestMsg, 'op' | 'args'>): CheckedCall {
  if (!isOp(req.op)) throw new CyborgError('request.invalid', `unknown control call ${JSON.stringify(req.op)}`, { op: req.op });
  const err = firstError(ControlCalls[req.op].args, req.args);
  if (err) throw new CyborgError('request.invalid', `control call ${req.op}: arguments ${err}`, { op: req.op, problem: err });
  return { op: req.op, args: req.args } as CheckedCall;
}

/** A call's result, checked against its reply schema: a reply out of schema is a bus fault, not data. */
export function checkedReply<O extends ControlOp>(op: O, result: unknown): ReplyOf<O> {
  const err = firstError(ControlCalls[op].reply, result);
  if (err) throw new BusError('bus.invalid_message', `reply to control call ${op} does not match its schema: ${err}`, { op, problem: err });
  return result as ReplyOf<O>;
}
