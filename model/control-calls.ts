import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { AcceleratorViewSchema, OperatorEventSchema } from './accelerator.js';
import { ArqHoldSchema, ArqViewSchema, BindingSchema, BoundToSchema } from './arq.js';
import { AuditPageSchema, AuditQuerySchema } from './audit.js';
import { Device } from './device.js';
import { AttributeDocSchema, DeviceProfileDocSchema, DeviceStatusSchema } from './documents.js';
import { AttachRequestSchema, AttachResultSchema, DetachResultSchema, DiscoverResultSchema, DriverViewSchema, ServiceViewSchema } from './driver.js';
import { TransitionRecordSchema } from './events.js';
import { HostViewSchema, RelayoutRequestSchema } from './host.js';
import { RequestMetaSchema } from './request.js';
import { AcceleratorUsageSchema, HostUsageSchema } from './usage.js';

/**
 * The control plane, declared once: every verb an api process (or another conductor) may send a
 * conductor, each a row of `ControlCalls` naming
 * - `args` and `reply`: the schemas the conductor checks the arguments with on receipt, and the
 *   caller the answer with (control/messages.ts);
 * - `callers`: the roles that may send it (the responder refuses any other);
 * - `handler`: `room.method` — the conductor's room that owns the state it reads or changes
 *   (actors/conductor: `accelerators` AcceleratorDesk, `arqs` ArqDesk, `hosts` HostDesk,
 *   `reads` FleetReads, `log` LogReads; actors/services: `documents`, `drivers`), or `views`, the
 *   responder's own (snapshot pages, readiness);
 * - `params`: the order of the handler's (and the facade method's) parameters, by argument name;
 * - `method`: the facade's name for it on the ControlPlane (`documents.…` / `driverAdmin.…` for
 *   the grouped ones), absent for a call between the roles only;
 * - how it travels: `home` (served by the ARQ home), `about` (the host whose lease holder serves
 *   it, and which the api's view must know first), `repeatable` (a read, asked again once when
 *   a lease was moving), `echo` (what the api's read model takes from the answer at once, so a
 *   client reads its own write), `minTimeoutMs`.
 *
 * The in-process facade (actors/conductor/conductor.ts), the bus responder (control/responder.ts)
 * and the remote client (control/client.ts) are built from these rows: a verb is a row here and a
 * method in its room.
 *
 * `since` is the protocol that introduced a row (release/: absent, protocol 1 — 0.1.0's verbs). A
 * caller sends a verb only while it speaks that protocol or a newer one (an older peer would not
 * know it), and a conductor refuses one written in an older protocol than its row's: each refusal
 * is `bus.protocol_unsupported`, naming the verb and the two versions (docs/upgrade.md). A verb
 * whose arguments or answer change shape is a new row, in the release that bumps the protocol.
 */

const Meta = Type.Optional(RequestMetaSchema);
const Id = Type.String({ minLength: 1 });
const Nothing = Type.Null();

/** At most this many ARQs per `arqHolds` call (the sweep asks in pages of it). */
export const ARQ_HOLDS_MAX = 500;

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

/** The roles that send control calls. */
export type Caller = 'api' | 'conductor';
const API: readonly Caller[] = ['api'];
const ANY: readonly Caller[] = ['api', 'conductor'];
const CONDUCTOR: readonly Caller[] = ['conductor'];

/**
 * What a call is about, for the api to route it to the lease holder of a host: `accelerator` (its
 * host, from the view; an accelerator the view lacks is its 404), `host` (a host the view must
 * know), `id` (an accelerator's host if the view has one, else any conductor), `route` (a host
 * name as given, not checked).
 */
export type About = { accelerator: string } | { host: string } | { id: string } | { route: string | undefined };

/** What the api's read model takes from an answer at once (its own write, before the views message comes). */
export type Echo =
  | 'accelerator'
  | 'arq'
  | 'retired'
  | 'driver'
  | { document: string; id: (args: never, reply: never) => string; body: (args: never, reply: never) => object | null };

interface Row<A extends TSchema = TSchema, R extends TSchema = TSchema> {
  args: A;
  reply: R;
  callers: readonly Caller[];
  handler: `${string}.${string}`;
  /** The protocol that introduced this verb; absent: 1. */
  since?: number;
  params?: readonly (keyof Static<A> & string)[];
  method?: string;
  home?: true;
  about?: (a: Static<A>) => About;
  repeatable?: true;
  echo?: Echo;
  /** Answered on the conductor without waiting (a read of memory): the in-process facade returns it as is. */
  sync?: boolean;
  minTimeoutMs?: number;
}

/** One row, its types kept (the literal handler, params and method names are what the facades are typed by). */
function verb<
  A extends TSchema,
  R extends TSchema,
  const H extends `${string}.${string}`,
  const P extends readonly (keyof Static<A> & string)[] = [],
  const M extends string = never,
  const S extends boolean = false,
>(
  row: Omit<Row<A, R>, 'handler' | 'params' | 'method' | 'sync'> & { handler: H; params?: P; method?: M; sync?: S },
): Omit<Row<A, R>, 'handler' | 'params' | 'method' | 'sync'> & { handler: H; params: P; method: M; sync: S } {
  return row as Omit<Row<A, R>, 'handler' | 'params' | 'method' | 'sync'> & { handler: H; params: P; method: M; sync: S };
}

const Host = Type.Optional(Type.String());
const refHost = (ref: string): string | undefined => (ref.lastIndexOf('@') > 0 ? ref.slice(ref.lastIndexOf('@') + 1) : undefined);

/** Every call an api process (or another conductor) may make, by name. */
export const ControlCalls = {
  /** `maxBytes`: the reader's own payload limit; the page stays under it and under the conductor's. */
  snapshot: verb({
    args: Type.Object({ cursor: Type.Optional(SnapshotCursor), maxBytes: Type.Optional(Type.Integer({ minimum: 16_384 })) }),
    reply: SnapshotPage,
    callers: API,
    handler: 'views.snapshot',
  }),
  // Whether the conductor can write (its database answers): the api's `/readyz` asks it.
  readiness: verb({
    args: Type.Object({}),
    reply: Type.Object({ conductorId: Type.String(), database: Type.String(), hosts: Type.Optional(Type.String({ maxLength: 1024 })) }),
    callers: API,
    handler: 'views.readiness',
  }),
  history: verb({
    args: Type.Object({ id: Id, limit: Type.Optional(Type.Integer({ minimum: 1 })) }),
    reply: Type.Array(TransitionRecordSchema),
    callers: API,
    handler: 'log.history',
    params: ['id', 'limit'],
    method: 'history',
    about: (a) => ({ id: a.id }),
    repeatable: true,
  }),
  /** Any conductor answers: the log is the shared database's. */
  audit: verb({
    args: Type.Object({ q: AuditQuerySchema }),
    reply: AuditPageSchema,
    callers: API,
    handler: 'log.audit',
    params: ['q'],
    method: 'audit',
    repeatable: true,
  }),
  // The database's committed states as digests: the api's background check of its view (control/view-check.ts).
  digest: verb({
    args: Type.Object({}),
    reply: Type.Object({
      accelerators: Type.Object({ count: Type.Integer({ minimum: 0 }), buckets: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 256 }) }),
      arqs: Type.Object({ count: Type.Integer({ minimum: 0 }), buckets: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 256 }) }),
    }),
    callers: API,
    handler: 'log.stateDigest',
    repeatable: true,
  }),
  act: verb({
    args: Type.Object({ id: Id, event: OperatorEventSchema, meta: Meta }),
    reply: AcceleratorViewSchema,
    callers: API,
    handler: 'accelerators.act',
    params: ['id', 'event', 'meta'],
    method: 'act',
    about: (a) => ({ accelerator: a.id }),
    echo: 'accelerator',
  }),
  attach: verb({
    args: Type.Object({ id: Id, req: Type.Object({ instanceUuid: Type.String(), projectId: Type.Optional(Type.String()) }), meta: Meta }),
    reply: AcceleratorViewSchema,
    callers: API,
    handler: 'accelerators.attach',
    params: ['id', 'req', 'meta'],
    method: 'attach',
    about: (a) => ({ accelerator: a.id }),
    echo: 'accelerator',
  }),
  detach: verb({
    args: Type.Object({ id: Id, req: Type.Object({ handleUuid: Type.Optional(Type.String()), instanceUuid: Type.Optional(Type.String()) }), meta: Meta }),
    reply: AcceleratorViewSchema,
    callers: API,
    handler: 'accelerators.detach',
    params: ['id', 'req', 'meta'],
    method: 'detach',
    about: (a) => ({ accelerator: a.id }),
    echo: 'accelerator',
  }),
  createArq: verb({
    args: Type.Object({
      req: Type.Object({
        deviceProfileName: Type.String(),
        deviceProfileGroupId: Type.Integer({ minimum: 0 }),
        projectId: Type.Union([Type.String(), Type.Null()]),
      }),
      meta: Meta,
    }),
    reply: ArqViewSchema,
    callers: API,
    handler: 'arqs.create',
    params: ['req', 'meta'],
    method: 'createArq',
    home: true,
    echo: 'arq',
  }),
  bindArq: verb({
    args: Type.Object({ uuid: Id, binding: BindingSchema, meta: Meta }),
    reply: ArqViewSchema,
    callers: API,
    handler: 'arqs.bind',
    params: ['uuid', 'binding', 'meta'],
    method: 'bindArq',
    home: true,
    echo: 'arq',
  }),
  unbindArq: verb({
    args: Type.Object({ uuid: Id, meta: Meta }),
    reply: ArqViewSchema,
    callers: API,
    handler: 'arqs.unbind',
    params: ['uuid', 'meta'],
    method: 'unbindArq',
    home: true,
    echo: 'arq',
  }),
  deleteArq: verb({
    args: Type.Object({ uuid: Id, meta: Meta }),
    reply: ArqViewSchema,
    callers: API,
    handler: 'arqs.delete',
    params: ['uuid', 'meta'],
    method: 'deleteArq',
    home: true,
    echo: 'arq',
  }),
  'documents.createProfile': verb({
    args: Type.Object({ doc: DeviceProfileDocSchema }),
    reply: DeviceProfileDocSchema,
    callers: API,
    handler: 'documents.createProfile',
    params: ['doc'],
    method: 'documents.createProfile',
    home: true,
    echo: { document: 'device_profiles', id: (_a: unknown, r: { uuid: string }) => r.uuid, body: (_a: unknown, r: object) => r },
  }),
  'documents.deleteProfile': verb({
    args: Type.Object({ uuid: Id }),
    reply: Nothing,
    callers: API,
    handler: 'documents.deleteProfile',
    params: ['uuid'],
    method: 'documents.deleteProfile',
    home: true,
    echo: { document: 'device_profiles', id: (a: { uuid: string }) => a.uuid, body: () => null },
  }),
  'documents.createAttribute': verb({
    args: Type.Object({ doc: AttributeDocSchema }),
    reply: AttributeDocSchema,
    callers: API,
    handler: 'documents.createAttribute',
    params: ['doc'],
    method: 'documents.createAttribute',
    home: true,
    echo: { document: 'attributes', id: (_a: unknown, r: { uuid: string }) => r.uuid, body: (_a: unknown, r: object) => r },
  }),
  'documents.deleteAttribute': verb({
    args: Type.Object({ uuid: Id }),
    reply: Nothing,
    callers: API,
    handler: 'documents.deleteAttribute',
    params: ['uuid'],
    method: 'documents.deleteAttribute',
    home: true,
    echo: { document: 'attributes', id: (a: { uuid: string }) => a.uuid, body: () => null },
  }),
  'documents.setDeviceStatus': verb({
    args: Type.Object({ uuid: Id, status: DeviceStatusSchema }),
    reply: Nothing,
    callers: API,
    handler: 'documents.setDeviceStatus',
    params: ['uuid', 'status'],
    method: 'documents.setDeviceStatus',
    home: true,
    echo: {
      document: 'device_status',
      id: (a: { uuid: string }) => a.uuid,
      body: (a: { uuid: string; status: string }) => ({ uuid: a.uuid, status: a.status, updatedAt: new Date().toISOString() }),
    },
  }),
  // Driver administration (the generic-driver spec's commands), served where the host's agent is heard.
  'drivers.list': verb({
    args: Type.Object({ filter: Type.Optional(Type.Object({ host: Host })) }),
    reply: Type.Array(DriverViewSchema),
    callers: API,
    handler: 'drivers.listDrivers',
    params: ['filter'],
    method: 'driverAdmin.listDrivers',
    about: (a) => ({ route: a.filter?.host }),
    repeatable: true,
  }),
  'drivers.get': verb({
    args: Type.Object({ ref: Id, host: Host }),
    reply: DriverViewSchema,
    callers: API,
    handler: 'drivers.getDriver',
    params: ['ref', 'host'],
    method: 'driverAdmin.getDriver',
    about: (a) => ({ route: a.host ?? refHost(a.ref) }),
    repeatable: true,
  }),
  'drivers.install': verb({
    args: Type.Object({ ref: Id, opts: Type.Object({ host: Host, version: Type.Optional(Type.String()) }), meta: Meta }),
    reply: DriverViewSchema,
    callers: API,
    handler: 'drivers.installDriver',
    params: ['ref', 'opts', 'meta'],
    method: 'driverAdmin.installDriver',
    about: (a) => ({ route: a.opts.host ?? refHost(a.ref) }),
    echo: 'driver',
  }),
  'drivers.uninstall': verb({
    args: Type.Object({ ref: Id, opts: Type.Object({ host: Host }), meta: Meta }),
    reply: DriverViewSchema,
    callers: API,
    handler: 'drivers.uninstallDriver',
    params: ['ref', 'opts', 'meta'],
    method: 'driverAdmin.uninstallDriver',
    about: (a) => ({ route: a.opts.host ?? refHost(a.ref) }),
    echo: 'driver',
  }),
  'drivers.update': verb({
    args: Type.Object({
      ref: Id,
      opts: Type.Object({ host: Host, version: Type.Optional(Type.String()), force: Type.Optional(Type.Boolean()) }),
      meta: Meta,
    }),
    reply: DriverViewSchema,
    callers: API,
    handler: 'drivers.updateDriver',
    params: ['ref', 'opts', 'meta'],
    method: 'driverAdmin.updateDriver',
    about: (a) => ({ route: a.opts.host ?? refHost(a.ref) }),
    echo: 'driver',
  }),
  'services.list': verb({
    args: Type.Object({ filter: Type.Optional(Type.Object({ host: Host, driver: Type.Optional(Type.String()) })) }),
    reply: Type.Array(ServiceViewSchema),
    callers: API,
    handler: 'drivers.listServices',
    params: ['filter'],
    method: 'driverAdmin.listServices',
    about: (a) => ({ route: a.filter?.host }),
    repeatable: true,
  }),
  'services.discover': verb({
    args: Type.Object({ opts: Type.Object({ host: Host }), meta: Meta }),
    reply: DiscoverResultSchema,
    callers: API,
    handler: 'drivers.discoverServices',
    params: ['opts', 'meta'],
    method: 'driverAdmin.discoverServices',
    about: (a) => ({ route: a.opts.host }),
  }),
  'instances.attach': verb({
    args: Type.Object({ instanceUuid: Id, req: AttachRequestSchema, meta: Meta }),
    reply: AttachResultSchema,
    callers: API,
    handler: 'drivers.attachInstance',
    params: ['instanceUuid', 'req', 'meta'],
    method: 'driverAdmin.attachInstance',
    about: (a) => ({ route: a.req.host }),
  }),
  'instances.detach': verb({
    args: Type.Object({ instanceUuid: Id, meta: Meta }),
    reply: DetachResultSchema,
    callers: API,
    handler: 'drivers.detachInstance',
    params: ['instanceUuid', 'meta'],
    method: 'driverAdmin.detachInstance',
  }),
  // Conductor to conductor: the ARQ home's bind effects, run where the accelerator is (control/arq-ops.ts).
  arqAttach: verb({
    args: Type.Object({ arqUuid: Id, binding: BindingSchema }),
    reply: BoundToSchema,
    callers: CONDUCTOR,
    handler: 'arqs.attachFor',
    params: ['arqUuid', 'binding'],
  }),
  arqRelease: verb({
    args: Type.Object({ arqUuid: Id, boundTo: Type.Union([BoundToSchema, Type.Null()]), asOwner: Type.Boolean() }),
    reply: Type.Boolean(),
    callers: CONDUCTOR,
    handler: 'arqs.releaseFor',
    params: ['arqUuid', 'boundTo', 'asOwner'],
  }),
  // Conductor to the ARQ home: which of these ARQs exist, in what state and bound where (the sweep
  // of allocations whose ARQ is gone asks before it releases anything).
  arqHolds: verb({
    args: Type.Object({ uuids: Type.Array(Id, { maxItems: ARQ_HOLDS_MAX }) }),
    reply: Type.Record(Type.String(), Type.Union([ArqHoldSchema, Type.Null()])),
    callers: ANY,
    handler: 'arqs.holds',
    params: ['uuids'],
    home: true,
    repeatable: true,
  }),
  // Conductor to the ARQ home: an operator released this ARQ's instance from its card (RELEASE).
  arqReleased: verb({
    args: Type.Object({ arqUuid: Id, reason: Type.String({ maxLength: 1024 }), meta: Meta }),
    reply: Type.Boolean(),
    callers: CONDUCTOR,
    handler: 'arqs.released',
    params: ['arqUuid', 'reason', 'meta'],
    home: true,
  }),
  relayout: verb({
    args: Type.Object({ host: Id, req: RelayoutRequestSchema, meta: Meta }),
    reply: Type.Array(AcceleratorViewSchema),
    callers: API,
    handler: 'hosts.relayout',
    params: ['host', 'req', 'meta'],
    method: 'relayout',
    about: (a) => ({ host: a.host }),
    // The driver re-lays the card out and the agent reports it again: as long as a driver operation.
    minTimeoutMs: 60_000,
  }),
  // An operator retires a lost, empty host: served by its lease holder (actors/conductor/host-retire.ts).
  'hosts.retire': verb({
    args: Type.Object({ host: Id, meta: Meta }),
    reply: Type.Object({ host: Type.String(), accelerators: Type.Array(Type.String()) }),
    callers: API,
    handler: 'hosts.retire',
    params: ['host', 'meta'],
    method: 'retireHost',
    about: (a) => ({ host: a.host }),
    echo: 'retired',
  }),
  // The agents a conductor holds, as it last heard them (issue 41: `status upgrade-check` lists the roles seen).
  'roles.seen': verb({
    args: Type.Object({}),
    reply: Type.Array(
      Type.Object({
        role: Type.Literal('agent'),
        host: Type.String(),
        id: Type.Union([Type.String(), Type.Null()]),
        state: HostViewSchema.properties.state,
        lastSeenAt: Type.Union([Type.String(), Type.Null()]),
        drivers: HostViewSchema.properties.drivers,
      }),
    ),
    callers: API,
    since: 2,
    handler: 'reads.rolesSeen',
    method: 'rolesSeen',
    repeatable: true,
    sync: true,
  }),
  // Usage windows live on the conductor that holds the host (the call is routed there).
  'usage.accelerator': verb({
    args: Type.Object({ id: Id }),
    reply: AcceleratorUsageSchema,
    callers: API,
    handler: 'reads.acceleratorUsage',
    params: ['id'],
    method: 'acceleratorUsage',
    about: (a) => ({ accelerator: a.id }),
    repeatable: true,
    sync: true,
  }),
  'usage.host': verb({
    args: Type.Object({ host: Id }),
    reply: HostUsageSchema,
    callers: API,
    handler: 'reads.hostUsage',
    params: ['host'],
    method: 'hostUsage',
    about: (a) => ({ host: a.host }),
    repeatable: true,
    sync: true,
  }),
};

export type ControlOp = keyof typeof ControlCalls;
type Calls = typeof ControlCalls;
export type ArgsOf<O extends ControlOp> = Static<Calls[O]['args']>;
export type ReplyOf<O extends ControlOp> = Static<Calls[O]['reply']>;
/** A row of the table as code that walks it sees it. */
export type ControlRow = Row;

/** The positional parameters of a verb's handler and facade method, by its `params`; trailing optional arguments stay optional. */
type Positional<A, P> = P extends readonly [infer H extends keyof A, ...infer T]
  ? {} extends Pick<A, H>
    ? [arg?: A[H], ...Positional<A, T>]
    : [arg: A[H], ...Positional<A, T>]
  : [];
export type ParamsOf<O extends ControlOp> = Calls[O]['params'] extends readonly [] ? [args: ArgsOf<O>] : Positional<ArgsOf<O>, Calls[O]['params']>;

type Room<O extends ControlOp> = Calls[O]['handler'] extends `${infer R}.${string}` ? R : never;
type Fn<O extends ControlOp> = Calls[O]['handler'] extends `${string}.${infer F}` ? F : never;
/** A handler's answer; a call answered with nothing (`null` on the wire) may return nothing. */
type Answer<O extends ControlOp> = ReplyOf<O> extends null ? void | null : ReplyOf<O>;
type Handler<O extends ControlOp> = (...a: ParamsOf<O>) => Answer<O> | Promise<Answer<O>>;

/** What the conductor's rooms must provide: for every row, the method its `handler` names, taking its `params`. */
export type ControlRooms = {
  [R in Room<ControlOp>]: { [O in ControlOp as Room<O> extends R ? Fn<O> : never]: Handler<O> };
};

/**
 * The rooms a conductor serves the table with (all but the responder's own `views`), and the
 * writes two of them announce, which the views messages carry to api processes.
 */
export type ConductorRooms = Omit<ControlRooms, 'views'> & {
  documents: { onWritten(listener: (collection: string, id: string, body: object | null) => void): () => void };
  hosts: { onRetired(listener: (host: string) => void): () => void };
};

type Top<O extends ControlOp> = Calls[O]['method'] extends `${string}.${string}` ? never : Calls[O]['method'];
/** The ControlPlane's verbs, as the api calls them: one method per row with a `method`, its parameters in `params` order. */
export type ControlVerbs = {
  [O in ControlOp as Top<O>]: (...a: ParamsOf<O>) => Calls[O]['sync'] extends true ? Answer<O> | Promise<Answer<O>> : Promise<Answer<O>>;
};

/** The protocol that introduced a verb (its row's `since`; 0.1.0's rows have none: 1). */
export function sinceOf(op: ControlOp): number {
  return (ControlCalls[op] as ControlRow).since ?? 1;
}

/** The rows of the table, each with its name. */
export function controlRows(): [ControlOp, ControlRow][] {
  return Object.entries(ControlCalls) as [ControlOp, ControlRow][];
}

/**
 * The in-process facade's verbs: each row's method is its room's handler itself, bound (no
 * function in between: a call from the api runs the room's code at once).
 */
export function bindVerbs(rooms: Record<string, object>): ControlVerbs {
  const out: Record<string, unknown> = {};
  for (const [, row] of controlRows()) {
    if (!row.method || row.method.includes('.')) continue;
    const [room, fn] = row.handler.split('.') as [string, string];
    const target = rooms[room] as Record<string, (...a: unknown[]) => unknown>;
    out[row.method] = target[fn]!.bind(target);
  }
  return out as ControlVerbs;
}

/** A call's named arguments from a facade method's positional ones (absent trailing ones left out). */
export function namedArgs(row: ControlRow, positional: readonly unknown[]): Record<string, unknown> {
  if (!row.params || row.params.length === 0) return (positional[0] ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  row.params.forEach((p, i) => {
    if (positional[i] !== undefined) out[p] = positional[i];
  });
  return out;
}

/** A handler's positional arguments from a call's named ones. */
export function positionalArgs(row: ControlRow, args: Record<string, unknown>): unknown[] {
  return row.params && row.params.length > 0 ? row.params.map((p) => args[p]) : [args];
}
