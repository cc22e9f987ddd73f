import type { AcceleratorEvent, Binding } from '../machines/index.js';
import type { AcceleratorView, ArqView, AttachHandleT, DeviceT, Documents, DriverControl, EventHub, HostView, PlacementStatusView, RequestMeta, TransitionRecord } from '../model/index.js';

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

/**
 * What the API needs from the conductor. The all-in-one passes the Conductor itself; an `api`
 * process on another machine passes a client that asks the conductor over the bus. Reads serve
 * the last committed view; writes resolve only after their commit.
 */
export interface ControlPlane {
  readonly hub: EventHub;
  listHosts(): HostView[];
  getHost(name: string): HostView;
  hostInventory(name: string): DeviceT[];
  listAccelerators(filter?: AcceleratorFilter): AcceleratorView[];
  getAccelerator(id: string): AcceleratorView;
  /** An accelerator's Placement sync state; absent where no Placement sync runs. */
  placementStatus?(id: string): PlacementStatusView | undefined;
  /** The committed transition log of one accelerator, ARQ or host (oldest first). */
  history(id: string, limit?: number): Promise<TransitionRecord[]>;
  act(id: string, event: AcceleratorEvent, meta?: RequestMeta): Promise<AcceleratorView>;
  attach(id: string, req: { instanceUuid: string; projectId?: string }, meta?: RequestMeta): Promise<AcceleratorView>;
  detach(id: string, req: { handleUuid?: string; instanceUuid?: string }, meta?: RequestMeta): Promise<AcceleratorView>;
  createArq(req: { deviceProfileName: string; deviceProfileGroupId: number; projectId: string | null }, meta?: RequestMeta): Promise<ArqView>;
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
