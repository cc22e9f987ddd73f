import { Type, type Static } from '@sinclair/typebox';
import { firstError } from '../bus/index.js';
import { BusError, CyborgError } from '../errors/index.js';
import {
  ControlCalls,
  Device,
  AcceleratorViewSchema,
  ArqViewSchema,
  HostViewSchema,
  TransitionEvent,
  type ArgsOf,
  type Caller,
  type ControlOp,
  type ReplyOf,
  sinceOf,
  type SnapshotCursor,
  type SnapshotPage,
} from '../model/index.js';
import { PROTOCOL, releaseOfProtocol } from '../release/index.js';

/**
 * The api ↔ conductor protocol (`cyborg.conductor.api`, `cyborg.conductor.<id>.api`,
 * `cyborg.views`) on the wire. The verbs themselves are the call table (model/control-calls.ts):
 * this file holds the envelope they travel in, the views messages, and the checks made on
 * receipt — of a call's arguments by the conductor, of its answer by the caller — both taken
 * from the table's row.
 */

export { ARQ_HOLDS_MAX, ControlCalls, sinceOf, SnapshotCursor, SnapshotPage, type ArgsOf, type ControlOp, type ReplyOf } from '../model/index.js';

/** The envelope of a call; its `args` are checked against the call's own schema (`checkedCall`). */
export const ControlRequest = Type.Object({
  op: Type.String({ minLength: 1, maxLength: 64 }),
  args: Type.Unknown(),
  /** The host the call is about, when known: the conductor that hears it forwards it to the host's lease holder. */
  host: Type.Optional(Type.String()),
  /** Set once forwarded, so that a call is forwarded at most once while leases move. */
  forwarded: Type.Optional(Type.Boolean()),
  /** The role that sends it (absent: an api process), checked against the row's `callers`. */
  caller: Type.Optional(Type.Union([Type.Literal('api'), Type.Literal('conductor')])),
  // --- "503 is true" (docs/persistence.md): the caller's wait, carried with the call ---
  /**
   * How long from its receipt the call may take before its caller stops waiting (ms, shorter than
   * the caller's own wait by a margin for the way back): nothing of it is committed after that, and
   * what waits then is answered `persistence.deadline_passed` (control/deadline.ts). Relative, not
   * a time of day: no process compares another's clock with its own.
   */
  budgetMs: Type.Optional(Type.Integer({ minimum: 1 })),
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
 * schema are refused with `request.invalid` (a 4xx: the caller's fault), naming what is wrong; a
 * verb newer than the protocol the request is written in (`written`, its envelope's) with
 * `bus.protocol_unsupported` — the sender speaks a protocol that has no such verb.
 */
export function checkedCall(req: Pick<ControlRequestMsg, 'op' | 'args' | 'caller'>, written: number = PROTOCOL.current): CheckedCall {
  if (!isOp(req.op)) throw new CyborgError('request.invalid', `unknown control call ${JSON.stringify(req.op)}`, { op: req.op });
  if (sinceOf(req.op) > written) throw protocolTooOld(req.op, written, 'the request is written in');
  const caller: Caller = req.caller ?? 'api';
  if (!ControlCalls[req.op].callers.includes(caller)) {
    throw new CyborgError('request.invalid', `control call ${req.op} is not for the ${caller} role to send`, { op: req.op, caller });
  }
  const err = firstError(ControlCalls[req.op].args, req.args);
  if (err) throw new CyborgError('request.invalid', `control call ${req.op}: arguments ${err}`, { op: req.op, problem: err });
  return { op: req.op, args: req.args } as CheckedCall;
}

/**
 * A verb sent in a protocol older than the one that introduced it: refused by the sender (it
 * speaks the older protocol while older peers run) or by the conductor (the request says so).
 */
export function protocolTooOld(op: ControlOp, version: number, whose: string): BusError {
  const since = sinceOf(op);
  const release = releaseOfProtocol(since);
  return new BusError(
    'bus.protocol_unsupported',
    `control call ${op} is protocol ${since}'s${release ? ` (cyborg ${release})` : ''}, but ${whose} protocol ${version}: ` +
      `an older role still runs (cyborg status upgrade-check lists it); upgrade it, or remove the [upgrade_levels] protocol pin (docs/upgrade.md)`,
    { op, since, protocol: version },
  );
}

/** A call's result, checked against its reply schema: a reply out of schema is a bus fault, not data. */
export function checkedReply<O extends ControlOp>(op: O, result: unknown): ReplyOf<O> {
  const err = firstError(ControlCalls[op].reply, result);
  if (err) throw new BusError('bus.invalid_message', `reply to control call ${op} does not match its schema: ${err}`, { op, problem: err });
  return result as ReplyOf<O>;
}
