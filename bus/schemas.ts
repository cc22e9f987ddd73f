import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType } from '@sinclair/typebox/errors';
import { BoundedName, BoundedText, STORABLE_PATTERN, Device } from '../model/index.js';

/**
 * Message schemas of the agent ↔ conductor subjects (see subjects.ts). The device model they
 * carry is model/device.ts; committed transitions (`cyborg.events.*`) are model/events.ts.
 *
 * Every string a report carries is one PostgreSQL can store (model/bounds.ts) and every list is
 * bounded: a message out of bounds is refused on receipt (logged, counted in
 * cyborg_bus_errors_total), so no report can poison a journal batch or flood the database.
 */

/** Far above the drivers a registry has: a register naming more is forged or broken. */
export const MAX_DRIVERS_PER_HOST = 64;
/** Far above the cards a server holds: an inventory naming more is forged or broken. */
export const MAX_DEVICES_PER_HOST = 4096;

const Host = () => BoundedName({ minLength: 1 });

export const DriverInfo = Type.Object({ name: BoundedName({ minLength: 1 }), version: BoundedName() });

export const RegisterMessage = Type.Object({
  host: Host(),
  agentId: BoundedName({ description: 'unique per agent process start' }),
  drivers: Type.Array(DriverInfo, { maxItems: MAX_DRIVERS_PER_HOST }),
  epoch: Type.Optional(Type.Integer({ minimum: 0, description: 'increments on each agent start (its local cache keeps it)' })),
});
export const RegisterReply = Type.Object({
  ok: Type.Boolean(),
  heartbeatIntervalMs: Type.Integer(),
  /** The recorded state of the agent's drivers (installed or not, version): the agent adopts it, so operator changes survive its restart. */
  drivers: Type.Optional(Type.Array(Type.Object({ name: Type.String(), version: Type.String(), installed: Type.Boolean() }))),
});

/** Far above a host's attach handles whose host side a driver makes (mdevs, vGPU-typed VFs). */
export const MAX_OBSERVED_PER_HOST = 16_384;

/**
 * What the drivers that can tell observe on the host now, beside the inventory: which deployables
 * they looked at, which of those deployables' attach handles have their host side made (an mdev
 * exists, a VF carries its vGPU type, a function is bound for passthrough), and each card's MIG
 * layout or VF count. The conductor compares it with what it recorded when an agent re-joins
 * (actors/conductor/rejoin.ts). A deployable not listed was not looked at: nothing is inferred.
 */
export const HostObservation = Type.Object({
  deployables: Type.Array(BoundedName({ minLength: 1 }), { maxItems: MAX_OBSERVED_PER_HOST }),
  present: Type.Array(BoundedName({ minLength: 1 }), { maxItems: MAX_OBSERVED_PER_HOST }),
  cards: Type.Array(
    Type.Object({
      deviceUuid: BoundedName({ minLength: 1 }),
      migLayout: Type.Optional(Type.Array(BoundedName({ minLength: 1 }), { maxItems: 64 })),
      vfCount: Type.Optional(Type.Integer({ minimum: 0, maximum: 4096 })),
    }),
    { maxItems: MAX_DEVICES_PER_HOST },
  ),
  /** Attach handles the host's running guests hold (libvirt's live domains): adopted when no record holds them. */
  guests: Type.Optional(
    Type.Array(
      Type.Object({
        deployableUuid: BoundedName({ minLength: 1 }),
        handleUuid: BoundedName({ minLength: 1 }),
        instanceUuid: BoundedName({ minLength: 1 }),
        projectId: Type.Optional(BoundedName({ minLength: 1 })),
      }),
      { maxItems: MAX_OBSERVED_PER_HOST },
    ),
  ),
});

export const InventoryMessage = Type.Object({
  host: Host(),
  agentId: BoundedName(),
  epoch: Type.Integer({ minimum: 0, description: 'increments on each agent start' }),
  seq: Type.Integer({ minimum: 0 }),
  devices: Type.Array(Device, { maxItems: MAX_DEVICES_PER_HOST }),
  /** Absent from agents older than it, or when no driver observes anything. */
  observed: Type.Optional(HostObservation),
  /**
   * Drivers whose discovery failed this time, with the reason: the devices recorded for them that
   * the report lacks (an agent without its cache has no record to send) are kept, marked.
   */
  unobservedDrivers: Type.Optional(Type.Array(Type.Object({ driver: BoundedName(), reason: BoundedText(4096) }), { maxItems: 64 })),
});
export const InventoryReply = Type.Object({ ok: Type.Boolean(), accelerators: Type.Integer() });

export const HeartbeatMessage = Type.Object({
  host: Host(),
  agentId: BoundedName(),
  epoch: Type.Integer({ minimum: 0 }),
  seq: Type.Integer({ minimum: 0 }),
  sentAt: Type.Number(),
});

export const CommandOp = Type.Union(
  ['install', 'uninstall', 'program', 'attach', 'detach', 'reset', 'mig_layout', 'vf_count', 'restore'].map((o) => Type.Literal(o)),
);

export const CommandMessage = Type.Object({
  op: CommandOp,
  idempotencyKey: BoundedName({ minLength: 1 }),
  host: BoundedName(),
  deployableUuid: BoundedName(),
  driver: BoundedName(),
  params: Type.Record(BoundedName(), Type.Unknown()),
  /** The request the command is run for (OpenStack's global request id): the agent sends it on to Glance. */
  requestId: Type.Optional(BoundedName()),
});
export const CommandReply = Type.Union([
  Type.Object({ ok: Type.Literal(true), result: Type.Record(Type.String(), Type.Unknown()) }),
  Type.Object({
    ok: Type.Literal(false),
    code: Type.String(),
    reason: Type.String(),
    /** The device is as it was before the command (a programming refused or rolled back): safe to use. */
    unchanged: Type.Optional(Type.Boolean()),
  }),
]);

export const TelemetryMessage = Type.Object({
  host: BoundedName(),
  at: Type.Number(),
  // Numbers only here: each sample is checked and clamped by the conductor on its own
  // (usage-window.ts), so one driver's out-of-range value does not cost the host's other samples.
  usage: Type.Array(
    Type.Object({
      deployableUuid: BoundedName(),
      utilization: Type.Number({ description: 'fraction busy, 0..1' }),
      memoryUsedBytes: Type.Optional(Type.Number()),
      memoryTotalBytes: Type.Optional(Type.Number()),
      temperatureC: Type.Optional(Type.Number()),
      powerW: Type.Optional(Type.Number()),
    }),
    { maxItems: 10_000 },
  ),
});

/**
 * One step of a long driver operation under way on a host (an FPGA programming: the download
 * from Glance, the checksum, the tool's output lines, a rollback), as the agent hears it. Said,
 * not stored: the conductor holding the host logs it against the accelerator.
 */
export const ProgressMessage = Type.Object({
  host: Host(),
  deployableUuid: BoundedName({ minLength: 1 }),
  op: Type.Literal('program'),
  /** The command's idempotency key: which run this step is of. */
  key: BoundedName(),
  phase: Type.Union(['fetch', 'verify', 'program', 'rollback', 'done'].map((p) => Type.Literal(p))),
  message: Type.String({ maxLength: 500 }),
  at: Type.Number(),
});

/** Samples an agent puts in one telemetry message: about 170 bytes each, well under NATS's 1 MB payload. */
export const USAGE_PER_MESSAGE = 2_000;

/** One poll of a host's drivers' health: a check per deployable, each classified by its driver. */
export const HealthMessage = Type.Object({
  host: Host(),
  agentId: BoundedName(),
  at: Type.Number({ description: 'when the agent checked (ms since the epoch)' }),
  checks: Type.Array(
    Type.Object({
      deployableUuid: BoundedName({ minLength: 1 }),
      healthy: Type.Boolean(),
      severity: Type.Optional(Type.Union([Type.Literal('transient'), Type.Literal('fatal')])),
      reason: Type.Optional(BoundedText(1024)),
    }),
    { maxItems: 100_000 },
  ),
});

export type HealthMsg = Static<typeof HealthMessage>;
export type RegisterMsg = Static<typeof RegisterMessage>;
export type InventoryMsg = Static<typeof InventoryMessage>;
export type HostObservationMsg = Static<typeof HostObservation>;
export type HeartbeatMsg = Static<typeof HeartbeatMessage>;
export type CommandMsg = Static<typeof CommandMessage>;
export type CommandReplyMsg = Static<typeof CommandReply>;
export type TelemetryMsg = Static<typeof TelemetryMessage>;
export type ProgressMsg = Static<typeof ProgressMessage>;

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
  if (!e) return 'invalid';
  // The character rule reads as what it means, not as its expression.
  const what =
    e.type === ValueErrorType.StringPattern && e.schema.pattern === STORABLE_PATTERN
      ? 'must not contain NUL characters or unpaired UTF-16 surrogates'
      : e.message;
  return `${e.path || '/'}: ${what}`;
}
