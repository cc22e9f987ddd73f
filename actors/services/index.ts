// Services the conductor uses beside its actor tree: operator documents (device profiles,
// attributes, device status), driver administration per host, the operator's instance attach,
// usage windows, the orphaned-handle sweep, the Placement sync loop and its allocation guard.
// None of them holds an accelerator's state: that is the actor tree's (actors/conductor/).

export { assertNotAllocated, placementAllocations, type ProviderAllocations } from './allocation-guard.js';
export { Collections, DocumentStore } from './documents.js';
export { DriverAdmin } from './driver-admin.js';
export { attachInstance, detachInstance, type Settle } from './instance-attach.js';
export { OrphanSweep, isOrphan, type HeldHandle } from './orphan-sweep.js';
export {
  PlacementSync,
  placementLink,
  startPlacementSync,
  type PlacementLink,
  type PlacementPort,
  type PlacementSyncSettings,
  type PlacementSyncSource,
} from './placement-sync.js';
export { ringBytes, UsageWindows } from './usage-window.js';
