/** The shared contracts' types (model/, machines/), imported so the page and the server cannot drift apart. */
export type { GraphState, GraphTransition, MachineGraph } from '../../machines/index.js';

import type { MachineGraph } from '../../machines/index.js';
import type { AcceleratorView, ArqView, HostView } from '../../model/index.js';
export type { AcceleratorUsage, AcceleratorView, AuditEntry, ArqView, HostUsage, HostView, TransitionRecord, UsageSample } from '../../model/index.js';
export type { DrainView, EventBatch, StreamEvent } from '../../model/index.js';

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
