import { Type, type Static } from '@sinclair/typebox';

/** Where Nova binds an ARQ: the host, the deployable's resource provider and the instance. */
export const BindingSchema = Type.Object({
  hostname: Type.String(),
  deviceRpUuid: Type.String(),
  instanceUuid: Type.String(),
  projectId: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  /**
   * What the device profile's group asks to be programmed before the bind completes
   * (`accel:bitstream_id`, `accel:function_id`); set by the conductor, never by the caller.
   */
  program: Type.Optional(Type.Object({ bitstreamId: Type.Optional(Type.String({ maxLength: 255 })), functionId: Type.Optional(Type.String({ maxLength: 255 })) })),
});

/** The attach handle a bound ARQ holds. */
export const BoundToSchema = Type.Object({
  acceleratorId: Type.String(),
  handleUuid: Type.String(),
});

/** The last committed view of an accelerator request (ARQ). */
export const ArqViewSchema = Type.Object({
  uuid: Type.String(),
  deviceProfileName: Type.String(),
  deviceProfileGroupId: Type.Integer(),
  projectId: Type.Union([Type.String(), Type.Null()]),
  binding: Type.Union([BindingSchema, Type.Null()]),
  boundTo: Type.Union([BoundToSchema, Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  state: Type.String(),
  /** Cyborg's name for the state (what the v2 API shows). */
  cyborgState: Type.String(),
  allowed: Type.Array(Type.String()),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

/** An ARQ as the sweep of orphan allocations needs it: its state and the handle it holds. */
export const ArqHoldSchema = Type.Object({ state: Type.String(), boundTo: Type.Union([BoundToSchema, Type.Null()]) });

export type ArqHold = Static<typeof ArqHoldSchema>;
export type Binding = Static<typeof BindingSchema>;
export type BoundTo = Static<typeof BoundToSchema>;
export type ArqView = Static<typeof ArqViewSchema>;
