import type { ArqState, HostState } from '../machines/index.js';
import type { ControlVerbs } from './control-calls.js';
import type { AcceleratorView } from './accelerator.js';
import type { ArqView } from './arq.js';
import type { AttachHandleT, DeviceT } from './device.js';
import type { Documents } from './documents.js';
import type { DriverControl } from './driver.js';
import type { EventFeed, EventHub } from './events.js';
import type { HostView } from './host.js';
import type { PlacementStatusView } from './placement.js';

/** ARQ filters of the v2 API (both optional; `projectId` scopes a non-admin caller). */
export interface ArqFilter {
  instanceUuid?: string;
  projectId?: string;
}

export interface AcceleratorFilter {
  host?: string;
  state?: string;
  type?: string;
}

export interface AttachToInstance {
  instanceUuid: string;
  projectId?: string;
}

export interface DetachFromInstance {
  handleUuid?: string;
  instanceUuid?: string;
}

export interface NewArq {
  deviceProfileName: string;
  deviceProfileGroupId: number;
  projectId: string | null;
}

/** The reads of the control plane: the last committed views, served where the caller is (no call). */
export interface ControlReads {
  listHosts(): HostView[];
  getHost(name: string): HostView;
  hostInventory(name: string): DeviceT[];
  listAccelerators(filter?: AcceleratorFilter): AcceleratorView[];
  getAccelerator(id: string): AcceleratorView;
  /** The accelerator whose Placement resource provider is `rpUuid`, if any. */
  getAcceleratorByRp(rpUuid: string): AcceleratorView | undefined;
  /** One attach handle of an accelerator (what a Bound ARQ shows Nova). */
  attachHandle(acceleratorId: string, handleUuid: string): AttachHandleT | undefined;
  listArqs(filter?: ArqFilter): ArqView[];
  getArq(uuid: string): ArqView;
  /** An accelerator's Placement sync state; absent where no Placement sync runs. */
  placementStatus?(id: string): PlacementStatusView | undefined;
}

/** The names of `ControlReads`, which the in-process facade takes from its reads room as they are. */
export const CONTROL_READS = [
  'listHosts',
  'getHost',
  'hostInventory',
  'listAccelerators',
  'getAccelerator',
  'getAcceleratorByRp',
  'attachHandle',
  'listArqs',
  'getArq',
  'placementStatus',
] as const satisfies readonly (keyof ControlReads)[];

/**
 * What the API needs from the conductor. The all-in-one passes the Conductor itself; an `api`
 * process on another machine passes a client that asks the conductor over the bus
 * (control/client.ts). Reads serve the last committed view; the verbs — one per row of the call
 * table (control-calls.ts), writes resolving only after their commit — are built from the table
 * on both sides.
 */
export interface ControlPlane extends ControlReads, ControlVerbs {
  readonly hub: EventFeed;
  /** Device profiles, operator attributes and device status (Cyborg's plain documents). */
  readonly documents: Documents;
  /** Drivers per host, backend services, instance attach/detach (the generic-driver spec's commands); absent where not served. */
  readonly driverAdmin?: DriverControl;
  /**
   * Why a miss on `id` in these reads is not yet authoritative (an api process whose view is
   * loading, or lacks the hosts a conductor is taking over): the 503 to answer instead of a 404.
   * Absent, or undefined, where a miss is a miss (the all-in-one reads the conductor's own memory).
   */
  unseen?(id: string): Error | undefined;
}

/** One host as readers outside the actor tree see it: its last committed view, inventory and accelerators. */
export interface CommittedHost {
  readonly name: string;
  readonly state: HostState;
  view(): HostView;
  inventory(): DeviceT[];
  readonly accelerators: ReadonlyMap<string, { view(): AcceleratorView }>;
}

/**
 * A conductor's committed state as its readers take it: snapshots and view batches (control/),
 * the metrics (metrics/). Every object reached here answers with what is committed, never with
 * a transition under way.
 */
export interface CommittedState {
  readonly hub: EventHub;
  readonly hosts: ReadonlyMap<string, CommittedHost>;
  readonly arqs: ReadonlyMap<string, { readonly state: ArqState; view(): ArqView }>;
}
