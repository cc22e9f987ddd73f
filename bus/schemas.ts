import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { Device } from '../model/device.js';

/**
 * Message schemas of the agent ↔ conductor subjects (see subjects.ts). The device model they
 * carry is model/device.ts; committed transitions (`cyborg.events.*`) are model/events.ts.
 */
export const DriverInfo = Type.Object({ name: Type.String(), version: Type.String() });

export const RegisterMessage = Type.Object({
  host: Type.String({ minLength: 1 }),
  agentId: Type.String({ description: 'unique per agent process start' }),
  drivers: Type.Array(DriverInfo),
  epoch: Type.Optional(Type.Integer({ minimum: 0, description: 'increments on each agent start (its local cache keeps it)' })),
});
export const RegisterReply = Type.Object({
  ok: Type.Boolean(),
  heartbeatIntervalMs: Type.Integer(),
  /** The recorded state of the agent's drivers (installed or not, version): the agent adopts it, so operator changes survive its restart. */
  drivers: Type.Optional(Type.Array(Type.Object({ name: Type.String(), version: Type.String(), installed: Type.Boolean() }))),
});

export const InventoryMessage = Type.Object({
  host: Type.String({ minLength: 1 }),
  agentId: Type.String(),
  epoch: Type.Integer({ minimum: 0, description: 'increments on each agent start' }),
  seq: Type.Integer({ minimum: 0 }),
  devices: Type.Array(Device),
});
export const InventoryReply = Type.Object({ ok: Type.Boolean(), accelerators: Type.Integer() });

export const HeartbeatMessage = Type.Object({
  host: Type.String({ minLength: 1 }),
  agentId: Type.String(),
  epoch: Type.Integer({ minimum: 0 }),
  seq: Type.Integer({ minimum: 0 }),
  sentAt: Type.Number(),
});

export const CommandOp = Type.Union(['install', 'uninstall', 'program', 'attach', 'detach', 'reset'].map((o) => Type.Literal(o)));

export const CommandMessage = Type.Object({
  op: CommandOp,
  idempotencyKey: Type.String({ minLength: 1 }),
  host: Type.String(),
  deployableUuid: Type.String(),
  driver: Type.String(),
  params: Type.Record(Type.String(), Type.Unknown()),
});
export const CommandReply = Type.Union([
  Type.Object({ ok: Type.Literal(true), result: Type.Record(Type.String(), Type.Unknown()) }),
  Type.Object({ ok: Type.Literal(false), code: Type.String(), reason: Type.String() }),
]);

export const TelemetryMessage = Type.Object({
  host: Type.String(),
  at: Type.Number(),
  usage: Type.Array(Type.Object({ deployableUuid: Type.String(), utilization: Type.Number(), memoryUsedBytes: Type.Optional(Type.Number()) })),
});

/** One poll of a host's drivers' health: a check per deployable, each classified by its driver. */
export const HealthMessage = Type.Object({
  host: Type.String({ minLength: 1 }),
  agentId: Type.String(),
  at: Type.Number({ description: 'when the agent checked (ms since the epoch)' }),
  checks: Type.Array(Type.Object({
    deployableUuid: Type.String({ minLength: 1 }),
    healthy: Type.Boolean(),
    severity: Type.Optional(Type.Union([Type.Literal('transient'), Type.Literal('fatal')])),
    reason: Type.Optional(Type.String({ maxLength: 1024 })),
  }), { maxItems: 100_000 }),
});

export type HealthMsg = Static<typeof HealthMessage>;
export type RegisterMsg = Static<typeof RegisterMessage>;
export type InventoryMsg = Static<typeof InventoryMessage>;
export type HeartbeatMsg = Static<typeof HeartbeatMessage>;
export type CommandMsg = Static<typeof CommandMessage>;
export type CommandReplyMsg = Static<typeof CommandReply>;
export type TelemetryMsg = Static<typeof TelemetryMessage>;

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

/** A compiled validator (cached per schema): bus messages are checked on every receipt. */
export function checker<T extends TSchema>(schema: T): TypeCheck<T> {
  let c = compiled.get(schema);
  if (!c) {
    c = TypeCompiler.Compile(schema);
    compiled.set(schema, c);
  }
  return c as TypeCheck<T>;
}

/** First validation error of `value` against `schema`, as a short text; undefined when valid. */
export function firstError(schema: TSchema, value: unknown): string | undefined {
  const c = checker(schema);
  if (c.Check(value)) return undefined;
  const e = c.Errors(value).First();
  return e ? `${e.path || '/'}: ${e.message}` : 'invalid';
}
