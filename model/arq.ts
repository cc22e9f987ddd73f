import { Type, type Static } from '@sinclair/typebox';
import { ARQ_STATES, BindingSchema, BoundToSchema, CYBORG_ARQ_STATES } from '../machines/index.js';
import { Literals } from './literals.js';

// Where Nova binds an ARQ and the handle it holds: the ARQ machine's own types (machines/arq.ts).
export { BindingSchema, BoundToSchema, type Binding, type BoundTo } from '../machines/index.js';

/** The last committed view of an accelerator request (ARQ). */
export const ArqViewSchema = Type.Object({
  uuid: Type.String(),
  deviceProfileName: Type.String(),
  deviceProfileGroupId: Type.Integer(),
  projectId: Type.Union([Type.String(), Type.Null()]),
  binding: Type.Union([BindingSchema, Type.Null()]),
  boundTo: Type.Union([BoundToSchema, Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  state: Literals(ARQ_STATES),
  /** What the state means to readers (`resolved`, `in-flight`, `busy`): asked instead of comparing names. */
  tags: Type.Array(Type.String()),
  /** Cyborg's name for the state (what the v2 API shows). */
  cyborgState: Literals(CYBORG_ARQ_STATES),
  allowed: Type.Array(Type.String()),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

/** An ARQ as the sweep of orphan allocations needs it: its state and the handle it holds. */
export const ArqHoldSchema = Type.Object({ state: Literals(ARQ_STATES), boundTo: Type.Union([BoundToSchema, Type.Null()]) });

export type ArqHold = Static<typeof ArqHoldSchema>;
export type ArqView = Static<typeof ArqViewSchema>;
