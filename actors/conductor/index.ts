// The conductor's actor tree: the supervisor, host and accelerator actors, ARQs and their binder,
// the bus intake and the periodic rounds, behind the ControlPlane facade (conductor.ts).

export { AcceleratorActor } from './accelerator-actor.js';
export { acceleratorLogic } from './accelerator-logic.js';
export { Conductor } from './conductor.js';
export type { ConductorOptions } from './conductor.js';
export { resendEveryMs } from './agent-command.js';
export { reportFromItsHost, type ReportStats } from './report-host.js';
export { ReportDoor } from './report-door.js';
export { retireHost, type ForgettingJournal, type RetiredHost, type RetireTarget } from './host-retire.js';
