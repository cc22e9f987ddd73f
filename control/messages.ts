import { Type, type Static } from '@sinclair/typebox';
import { TransitionEvent } from '../model/index.js';

/**
 * Schemas of the api ↔ conductor subjects (`cyborg.conductor.api`, `cyborg.conductor.<id>.api`,
 * `cyborg.views`). The api role is a thin client: it calls ControlPlane methods by name, and keeps
 * a read model of committed views that the conductors publish after each commit.
 */

/** The ControlPlane methods an api process may call remotely (reads are served from its read model). */
export const ControlOps = [
  'history', 'act', 'attach', 'detach', 'createArq', 'bindArq', 'unbindArq', 'deleteArq',
  'documents.createProfile', 'documents.deleteProfile', 'documents.createAttribute', 'documents.deleteAttribute', 'documents.setDeviceStatus',
  'snapshot',
  // Driver administration (api/remote-driver-control.ts): args are [method, …its arguments].
  'driverAdmin',
  // Conductor to conductor: the ARQ home's bind effects, run where the accelerator is (arq-home.ts).
  'arqAttach', 'arqRelease',
] as const;
export type ControlOp = (typeof ControlOps)[number];

export const ControlRequest = Type.Object({
  op: Type.Union(ControlOps.map((o) => Type.Literal(o))),
  args: Type.Array(Type.Unknown(), { maxItems: 8 }),
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

/** Committed views in one message (views are replaced whole; `deleted` names what is gone). */
export const ViewsBatch = Type.Object({
  conductorId: Type.String(),
  hosts: Type.Array(Type.Object({ view: Type.Record(Type.String(), Type.Unknown()), inventory: Type.Optional(Type.Array(Type.Unknown())) })),
  accelerators: Type.Array(Type.Record(Type.String(), Type.Unknown())),
  arqs: Type.Array(Type.Record(Type.String(), Type.Unknown())),
  documents: Type.Array(Type.Object({ collection: Type.String(), id: Type.String(), body: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]) })),
  /** Transitions committed with these views, applied after them (so a reader never sees an event before its view). */
  transitions: Type.Array(TransitionEvent),
  deleted: Type.Optional(Type.Object({ arqs: Type.Array(Type.String()) })),
});

export type ControlRequestMsg = Static<typeof ControlRequest>;
export type ControlReplyMsg = Static<typeof ControlReply>;
export type ViewsBatchMsg = Static<typeof ViewsBatch>;
