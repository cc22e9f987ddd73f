// The door of machines/: other rooms take the machines and their vocabulary from here. The browser
// bundle takes it too (ui/), so nothing behind it may need Node or a server room.
export * from './accelerator.js';
export * from './arq.js';
export * from './host.js';
export * from './driver.js';
export { placementSyncMachine, type PassResult, type PlacementSyncMachine, type SyncWork } from './placement-sync.js';
export { allowedEvents } from './allowed.js';
export * from './health.js';
export { namesOf, recoverInterrupted, tagsOfState, type StateRecord } from './vocabulary.js';
export { eventLabel, machineGraph, type GraphState, type GraphTransition, type MachineGraph } from './graph.js';
export { HOST_DELETED, isDetourState, isFailureState, NOT_YET, TRANSITION_ENDS, type TransitionEnd } from './states.js';
