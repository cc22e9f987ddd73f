import type { ArqState, HostState } from '../machines/index.js';
import type { AcceleratorView, OperatorEvent } from './accelerator.js';
import type { AuditPage, AuditQuery } from './audit.js';
import type { ArqView, Binding } from './arq.js';
import type { AttachHandleT, DeviceT } from './device.js';
import type { Documents } from './documents.js';
import type { DriverControl } from './driver.js';
import type { EventFeed, EventHub, TransitionRecord } from './events.js';
import type { HostView, RelayoutRequest } from './host.js';
import type { PlacementStatusView } from './placement.js';
import type { RequestMeta } from './request.js';
import type { AcceleratorUsage, HostUsage } from './usage.js';

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

/**
 * What the API needs from the conductor. The all-in-one passes the Conductor itself; an `api`
 * process on another machine passes a client that asks the conductor over the bus
 * (control/client.ts). Reads serve the last committed view; writes resolve only after their commit.
 */
export interface ControlPlane {
  readonly hub: EventFeed;
  listHosts(): HostView[];
  getHost(name: string): HostView;
  hostInventory(name: string): DeviceT[];
  listAccelerators(filter?: AcceleratorFilter): AcceleratorView[];
  getAccelerator(id: string): AcceleratorView;
  /** An accelerator's Placement sync state; absent where no Placement sync runs. */
  placementStatus?(id: string): PlacementStatusView | undefined;
  /**
   * Re-lays out one card of a host (MIG instances, VF count) through its driver, refused while
   * any of its accelerators is allocated, in Cyborg's records or in Placement; answers the host's
   * accelerators once the agent has reported the card anew.
   */
  relayout(host: string, req: RelayoutRequest, meta?: RequestMeta): Promise<AcceleratorView[]>;
  /** An accelerator's recent usage samples, from the conductor's in-memory window. */
  acceleratorUsage(id: string): AcceleratorUsage | Promise<AcceleratorUsage>;
  /** A host's accelerators' recent usage (those that reported any). */
  hostUsage(host: string): HostUsage | Promise<HostUsage>;
  /** The committed transition log of one accelerator, ARQ or host (oldest first). */
  history(id: string, limit?: number): Promise<TransitionRecord[]>;
  /** The fleet's transition and action log, filtered, newest first, in cursor pages. */
  audit(q: AuditQuery): Promise<AuditPage>;
  act(id: string, event: OperatorEvent, meta?: RequestMeta): Promise<AcceleratorView>;
  attach(id: string, req: AttachToInstance, meta?: RequestMeta): Promise<AcceleratorView>;
  detach(id: string, req: DetachFromInstance, meta?: RequestMeta): Promise<AcceleratorView>;
  createArq(req: NewArq, meta?: RequestMeta): Promise<ArqView>;
  listArqs(filter?: ArqFilter): ArqView[];
  getArq(uuid: string): ArqView;
  bindArq(uuid: string, binding: Binding, meta?: RequestMeta): Promise<ArqView>;
  unbindArq(uuid: string, meta?: RequestMeta): Promise<ArqView>;
  deleteArq(uuid: string, meta?: RequestMeta): Promise<ArqView>;
  /** Device profiles, operator attributes and device status (Cyborg's plain documents). */
  readonly documents: Documents;
  /** The accelerator whose Placement resource provider is `rpUuid`, if any. */
  getAcceleratorByRp(rpUuid: string): AcceleratorView | undefined;
  /** One attach handle of an accelerator (what a Bound ARQ shows Nova). */
  attachHandle(acceleratorId: string, handleUuid: string): AttachHandleT | undefined;
  /** Drivers per host, backend services, instance attach/detach (the generic-driver spec's commands); absent where not served. */
  readonly driverAdmin?: DriverControl;
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
