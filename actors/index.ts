export { Conductor, type ConductorOptions } from './conductor.js';
export { Agent, type AgentOptions } from './agent.js';
export { HostActor, type HostView, type Timing } from './host-actor.js';
export { AcceleratorActor, type AcceleratorView, type AcceleratorSpec } from './accelerator-actor.js';
export { ArqActor, type ArqView } from './arq-actor.js';
export { EventHub, type CommittedEvent } from './events.js';
export { MemoryJournal, type Journal, type Change, type Recovered, type MachineRecord, type TransitionRecord } from './journal.js';
export type { RequestMeta } from './machine-host.js';
