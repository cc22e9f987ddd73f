/** The API's own types, imported (types only) so the page and the server cannot drift apart. */
export type { EventBatch, StreamEvent } from '../../api/routes/events.js';
export type { GraphState, GraphTransition, MachineGraph } from '../../api/routes/machine-graph.js';

import type { MachineGraph } from '../../api/routes/machine-graph.js';
import type { AcceleratorView, ArqView, HostView } from '../../model/index.js';
export type { AcceleratorUsage, AcceleratorView, AuditEntry, ArqView, HostUsage, HostView, TransitionRecord, UsageSample } from '../../model/index.js';
export type { DrainView } from '../../api/routes/maintenance.js';

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
