import { Type, type Static } from '@sinclair/typebox';
import { DRIVER_STATES, HOST_STATES } from '../machines/index.js';
import { AcceleratorViewSchema } from './accelerator.js';
import { ArqViewSchema } from './arq.js';
import { BackendServiceSchema } from './device.js';
import { Literals } from './literals.js';
import type { RequestMeta } from './request.js';

/** A driver on one host, as `driver-list` shows it. */
export const DriverViewSchema = Type.Object({
  id: Type.String(),
  host: Type.String(),
  name: Type.String(),
  version: Type.String(),
  lastError: Type.Union([Type.Object({ op: Type.String(), reason: Type.String(), at: Type.String() }), Type.Null()]),
  updatedAt: Type.String(),
  state: Literals(DRIVER_STATES),
  /** What the state means to readers (`busy`: an operation is under way). */
  tags: Type.Array(Type.String()),
  /** The host's agent loaded it at its last registration. */
  loaded: Type.Boolean(),
  /** `unknown` while no actor of this conductor runs the host (its lease moved). */
  hostState: Literals([...HOST_STATES, 'unknown']),
  accelerators: Type.Integer(),
  /** Accelerators of this driver that instances hold now. */
  inUse: Type.Integer(),
});

/** A backend service of one host's driver, as `service-list` shows it. */
export const ServiceViewSchema = Type.Composite([
  BackendServiceSchema,
  Type.Object({ host: Type.String(), driver: Type.String(), discoveredAt: Type.String() }),
]);

export const DiscoverResultSchema = Type.Object({
  services: Type.Array(ServiceViewSchema),
  /** Hosts (or drivers) that could not answer, with why. */
  failures: Type.Array(Type.Object({ host: Type.String(), driver: Type.Optional(Type.String()), code: Type.String(), reason: Type.String() })),
});

/** Which accelerator an instance gets: one by id, or the first free one of a resource class (and traits), or of a device profile. */
export const AttachRequestSchema = Type.Object({
  acceleratorId: Type.Optional(Type.String()),
  /** With `acceleratorId`: the attach handle to take (the one a running guest already uses), instead of the first free one. */
  handleUuid: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  resourceClass: Type.Optional(Type.String()),
  traits: Type.Optional(Type.Array(Type.String())),
  deviceProfileName: Type.Optional(Type.String()),
  /** Placement's group_policy for a profile with several request groups: `isolate` (each on another accelerator) or `none` (the default). */
  groupPolicy: Type.Optional(Type.Union([Type.Literal('isolate'), Type.Literal('none')])),
  host: Type.Optional(Type.String()),
  projectId: Type.Optional(Type.String()),
});

/** The first ARQ and accelerator; with several (a profile of several groups, or amounts above 1) all of them too. */
export const AttachResultSchema = Type.Object({
  arq: ArqViewSchema,
  accelerator: AcceleratorViewSchema,
  arqs: Type.Optional(Type.Array(ArqViewSchema)),
  accelerators: Type.Optional(Type.Array(AcceleratorViewSchema)),
});

export const DetachResultSchema = Type.Object({
  instanceUuid: Type.String(),
  /** ARQs deleted (each unbound first). */
  arqs: Type.Array(Type.String()),
  /** Accelerators released, as they are now. */
  accelerators: Type.Array(AcceleratorViewSchema),
});

export type DriverView = Static<typeof DriverViewSchema>;
export type ServiceView = Static<typeof ServiceViewSchema>;
export type DiscoverResult = Static<typeof DiscoverResultSchema>;
export type AttachRequest = Static<typeof AttachRequestSchema>;
export type AttachResult = Static<typeof AttachResultSchema>;
export type DetachResult = Static<typeof DetachResultSchema>;

/**
 * What the API's driver, service and instance routes need: the conductor's DriverAdmin, or an
 * api process's client of it over the bus (control/driver-client.ts), hence reads that may be async.
 */
export interface DriverControl {
  listDrivers(filter?: { host?: string }): DriverView[] | Promise<DriverView[]>;
  getDriver(ref: string, host?: string): DriverView | Promise<DriverView>;
  installDriver(ref: string, opts: { host?: string; version?: string }, meta?: RequestMeta): Promise<DriverView>;
  uninstallDriver(ref: string, opts: { host?: string }, meta?: RequestMeta): Promise<DriverView>;
  /** Only on a drained host (every device marked for maintenance, no consumer left), unless `force`. */
  updateDriver(ref: string, opts: { host?: string; version?: string; force?: boolean }, meta?: RequestMeta): Promise<DriverView>;
  listServices(filter?: { host?: string; driver?: string }): ServiceView[] | Promise<ServiceView[]>;
  discoverServices(opts: { host?: string }, meta?: RequestMeta): Promise<DiscoverResult>;
  attachInstance(instanceUuid: string, req: AttachRequest, meta?: RequestMeta): Promise<AttachResult>;
  detachInstance(instanceUuid: string, meta?: RequestMeta): Promise<DetachResult>;
}
