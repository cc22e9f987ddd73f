import { Type, type Static } from '@sinclair/typebox';
import { ACCELERATOR_STATES, AllocationSchema, ProgramInfoSchema } from '../machines/index.js';
import { BoundedName } from './bounds.js';
import { Literals } from './literals.js';

// Who holds an accelerator and what it was programmed with: the accelerator machine's own types
// (machines/accelerator.ts), declared there since model/ imports machines/ and not the reverse.
export { AllocationSchema, ProgramInfoSchema, type Allocation, type ProgramInfo } from '../machines/index.js';

/**
 * An accelerator's health as the conductor judges it from its agent's checks (machines/health.ts);
 * `unknown` while its driver could not observe it (the reason says why, in the tool's words).
 */
export const HealthViewSchema = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('quarantined'), Type.Literal('unknown')]),
  /** Stays quarantined until an operator resets or clears it. */
  fatal: Type.Boolean(),
  reason: Type.Union([Type.String(), Type.Null()]),
  since: Type.Union([Type.String(), Type.Null()]),
});

/** A maintenance mark: `draining` while instances still hold the device (listed), then `maintenance`. */
export const MaintenanceViewSchema = Type.Object({
  mark: Type.Union([Type.Literal('draining'), Type.Literal('maintenance')]),
  /** Who marked it: the device itself, its host's drain, or both (each cancelled on its own). */
  scopes: Type.Array(Type.Union([Type.Literal('device'), Type.Literal('host')])),
  since: Type.Union([Type.String(), Type.Null()]),
  consumers: Type.Array(Type.Object({ instanceUuid: Type.String(), arqUuid: Type.Optional(Type.String()), projectId: Type.Optional(Type.String()) })),
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
  state: Literals(ACCELERATOR_STATES),
  tags: Type.Array(Type.String()),
  allowed: Type.Array(Type.String(), { description: 'operator events the machine accepts now' }),
  allocations: Type.Array(AllocationSchema),
  program: Type.Union([ProgramInfoSchema, Type.Null()]),
  error: Type.Union([Type.Object({ op: Type.String(), reason: Type.String() }), Type.Null()]),
  /** Discovery no longer reports it, but an instance holds it: kept, flagged, never dropped. */
  missing: Type.Boolean(),
  health: Type.Optional(HealthViewSchema),
  maintenance: Type.Optional(
    Type.Union([MaintenanceViewSchema, Type.Null()], { description: 'draining (consumers listed) until the last one leaves, then maintenance' }),
  ),
  generation: Type.Integer(),
  updatedAt: Type.String(),
  /** The names of the projects in `allocations` and the drain's consumers, by id, where Keystone knows them (the api adds them; absent in noauth mode). */
  projectNames: Type.Optional(Type.Record(Type.String(), Type.String())),
});

const MaintenanceScopeSchema = Type.Union([Type.Literal('device'), Type.Literal('host')]);

/**
 * The events an operator (or the API on one's behalf) may send an accelerator; the machine's
 * own events (driver outcomes, host loss) never come from outside the conductor.
 */
export const OperatorEventSchema = Type.Union([
  Type.Object({ type: Type.Literal('ENABLE') }),
  Type.Object({ type: Type.Literal('DISABLE') }),
  // Arguments are recorded in the transition log: ids, bounded like the columns they end in.
  Type.Object({ type: Type.Literal('PROGRAM'), bitstreamId: Type.Optional(BoundedName()), functionId: Type.Optional(BoundedName()) }),
  Type.Object({
    type: Type.Literal('ATTACH'),
    handleUuid: BoundedName(),
    instanceUuid: BoundedName(),
    arqUuid: Type.Optional(BoundedName()),
    projectId: Type.Optional(BoundedName()),
  }),
  Type.Object({ type: Type.Literal('DETACH'), handleUuid: BoundedName() }),
  Type.Object({ type: Type.Literal('RELEASE'), instanceUuid: BoundedName() }),
  Type.Object({ type: Type.Literal('RETRY') }),
  Type.Object({ type: Type.Literal('REMOVE') }),
  Type.Object({ type: Type.Literal('RESET') }),
  Type.Object({ type: Type.Literal('CLEAR_HEALTH') }),
  Type.Object({ type: Type.Literal('MAINTAIN'), scope: MaintenanceScopeSchema }),
  Type.Object({ type: Type.Literal('END_MAINTENANCE'), scope: MaintenanceScopeSchema }),
]);

export type AcceleratorView = Static<typeof AcceleratorViewSchema>;
export type OperatorEvent = Static<typeof OperatorEventSchema>;
