export * from './accelerator.js';
export * from './arq.js';
export * from './host.js';
export * from './driver.js';
export { allowedEvents } from './allowed.js';
export * from './health.js';
export { namesOf, recoverInterrupted, tagsOfState, type StateRecord } from './vocabulary.js';
export { eventLabel, machineGraph, type GraphState, type GraphTransition, type MachineGraph } from './graph.js';
export { HOST_DELETED, isDetourState, isFailureState, NOT_YET, TRANSITION_ENDS, type TransitionEnd } from './states.js';
