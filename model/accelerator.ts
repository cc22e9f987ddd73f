import { Type, type Static } from '@sinclair/typebox';

/** An instance's hold on one attach handle of an accelerator. */
export const AllocationSchema = Type.Object({
  handleUuid: Type.String(),
  instanceUuid: Type.String(),
  arqUuid: Type.Optional(Type.String()),
  projectId: Type.Optional(Type.String()),
});

/** What an accelerator was last programmed with. */
export const ProgramInfoSchema = Type.Object({
  bitstreamId: Type.Optional(Type.String()),
  functionId: Type.Optional(Type.String()),
});

/** The last committed view of an accelerator: what the API and the UI show. */
export const AcceleratorViewSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  host: Type.String(),
  deviceUuid: Type.String(),
  deviceType: Type.String(),
  vendor: Type.String(),
  model: Type.String(),
  driver: Type.String(),
  resourceClass: Type.Union([Type.String(), Type.Null()]),
  traits: Type.Array(Type.String()),
  rpUuid: Type.String(),
  capacity: Type.Integer(),
  state: Type.String(),
  tags: Type.Array(Type.String()),
  allowed: Type.Array(Type.String()),
  allocations: Type.Array(AllocationSchema),
  program: Type.Union([ProgramInfoSchema, Type.Null()]),
  error: Type.Union([Type.Object({ op: Type.String(), reason: Type.String() }), Type.Null()]),
  /** Discovery no longer reports it, but an instance holds it: kept, flagged, never dropped. */
  missing: Type.Boolean(),
  generation: Type.Integer(),
  updatedAt: Type.String(),
});

/**
 * The events an operator (or the API on one's behalf) may send an accelerator; the machine's
 * own events (driver outcomes, host loss) never come from outside the conductor.
 */
export const OperatorEventSchema = Type.Union([
  Type.Object({ type: Type.Literal('ENABLE') }),
  Type.Object({ type: Type.Literal('DISABLE') }),
  Type.Object({ type: Type.Literal('PROGRAM'), bitstreamId: Type.Optional(Type.String()), functionId: Type.Optional(Type.String()) }),
  Type.Object({
    type: Type.Literal('ATTACH'), handleUuid: Type.String(), instanceUuid: Type.String(),
    arqUuid: Type.Optional(Type.String()), projectId: Type.Optional(Type.String()),
  }),
  Type.Object({ type: Type.Literal('DETACH'), handleUuid: Type.String() }),
  Type.Object({ type: Type.Literal('RETRY') }),
  Type.Object({ type: Type.Literal('REMOVE') }),
]);

export type Allocation = Static<typeof AllocationSchema>;
export type ProgramInfo = Static<typeof ProgramInfoSchema>;
export type AcceleratorView = Static<typeof AcceleratorViewSchema>;
export type OperatorEvent = Static<typeof OperatorEventSchema>;
