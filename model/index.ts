/**
 * The shared model: the device model, the read-model views, committed transitions and the
 * control-plane interface. No implementation owns it; every room imports it from here.
 */
export {
  type AcceleratorView,
  AcceleratorViewSchema,
  type Allocation,
  AllocationSchema,
  HealthViewSchema,
  MaintenanceViewSchema,
  type OperatorEvent,
  OperatorEventSchema,
  type ProgramInfo,
  ProgramInfoSchema,
} from './accelerator.js';
export { type ArqHold, ArqHoldSchema, type ArqView, ArqViewSchema, type Binding, BindingSchema, type BoundTo, BoundToSchema } from './arq.js';
export {
  type AcceleratorFilter,
  type ArqFilter,
  type AttachToInstance,
  type CommittedHost,
  type CommittedState,
  type ControlPlane,
  type DetachFromInstance,
  type ControlReads,
  CONTROL_READS,
  type NewArq,
} from './control-plane.js';
export {
  ARQ_HOLDS_MAX,
  type About,
  type ArgsOf,
  bindVerbs,
  type Caller,
  type ConductorRooms,
  ControlCalls,
  type ControlOp,
  type ControlRooms,
  type ControlRow,
  controlRows,
  type ControlVerbs,
  type Echo,
  namedArgs,
  type ParamsOf,
  positionalArgs,
  type ReplyOf,
  sinceOf,
  SnapshotCursor,
  SnapshotPage,
} from './control-calls.js';
export {
  AttachHandle,
  type AttachHandleT,
  Attribute,
  type AttributeT,
  type BackendService,
  BackendServiceSchema,
  Deployable,
  type DeployableT,
  Device,
  type DeviceT,
  DeviceType,
  HardwareIdentity,
  type HardwareIdentityT,
  withoutIdentity,
} from './device.js';
export {
  type AttributeDoc,
  AttributeDocSchema,
  type DeviceProfileDoc,
  DeviceProfileDocSchema,
  type DeviceStatusDoc,
  DeviceStatusDocSchema,
  DeviceStatusSchema,
  type Documents,
} from './documents.js';
export {
  type AttachRequest,
  AttachRequestSchema,
  type AttachResult,
  AttachResultSchema,
  type DetachResult,
  DetachResultSchema,
  type DiscoverResult,
  DiscoverResultSchema,
  type DriverControl,
  type DriverView,
  DriverViewSchema,
  type ServiceView,
  ServiceViewSchema,
} from './driver.js';
export {
  type CommittedEvent,
  type EventBatch,
  type EventFeed,
  EventHub,
  type Listener,
  type StreamEvent,
  TransitionEvent,
  type TransitionEventMsg,
  type TransitionRecord,
  TransitionRecordSchema,
} from './events.js';
export { type DrainView, type HostView, HostViewSchema, type RelayoutRequest, RelayoutRequestSchema } from './host.js';
export { type PlacementStatusView, type PlacementSyncState } from './placement.js';
export { type RequestMeta, RequestMetaSchema } from './request.js';
export { type AuditEntry, AuditEntrySchema, type AuditPage, AuditPageSchema, type AuditQuery, AuditQuerySchema, decodeCursor, encodeCursor } from './audit.js';
export { type AcceleratorUsage, AcceleratorUsageSchema, type HostUsage, HostUsageSchema, type UsageSample, UsageSampleSchema } from './usage.js';
export { type Capacity, type CapacityCounts, CapacityCountsSchema, capacityOf, CapacitySchema, slotsOf } from './capacity.js';
export { whyUnavailable } from './availability.js';
export { whyRefused } from './refusal.js';
export { bucketDigest, DIGEST_BUCKETS, type StateDigest } from './digest.js';
export { type FleetHost, type FleetSource, type UsageReadings, type UsageStats } from './fleet.js';
export { BOUND, BoundedName, BoundedText, BoundedUuid, STORABLE_PATTERN } from './bounds.js';
export { type ArqContext, cyborgState } from './arq-record.js';
export { type PlacementTruth, placementTruthOf } from './placement-truth.js';
