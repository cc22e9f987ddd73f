/** The API's own types, imported (types only) so the page and the server cannot drift apart. */
export type { AcceleratorView } from '../../actors/accelerator-actor.js';
export type { ArqView } from '../../actors/arq-actor.js';
export type { HostView } from '../../actors/host-actor.js';
export type { TransitionRecord } from '../../actors/journal.js';
export type { EventBatch, StreamEvent } from '../../api/routes/events.js';
export type { GraphState, GraphTransition, MachineGraph } from '../../api/routes/machine-graph.js';

import type { AcceleratorView } from '../../actors/accelerator-actor.js';
import type { ArqView } from '../../actors/arq-actor.js';
import type { HostView } from '../../actors/host-actor.js';
import type { MachineGraph } from '../../api/routes/machine-graph.js';

/** `GET /cyborg/v1/snapshot`: everything, with the event cursor it matches. */
export interface Snapshot {
  cursor: number;
  hosts: HostView[];
  accelerators: AcceleratorView[];
  arqs: ArqView[];
}

export interface Machines {
  accelerator: MachineGraph;
  arq: MachineGraph;
  host: MachineGraph;
}
