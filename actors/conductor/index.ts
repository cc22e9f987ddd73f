// The conductor's actor tree: the supervisor, host and accelerator actors, ARQs and their binder,
// operator documents, driver administration and the Placement sync loop.

export { AcceleratorActor, acceleratorLogic } from './accelerator-actor.js';
export { Conductor } from './conductor.js';
export { assertNotAllocated, placementAllocations, type ProviderAllocations } from './allocation-guard.js';
export type { ConductorOptions } from './conductor.js';
export { Collections } from './documents.js';
export { resendEveryMs } from './host-actor.js';
export { PlacementSync, startPlacementSync } from './placement-sync.js';
export { reportFromItsHost, type ReportStats } from './report-host.js';
