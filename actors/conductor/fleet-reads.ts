import { NotFoundError } from '../../errors/index.js';
import { ArqStates, isDeleting } from '../../machines/index.js';
import type {
  AcceleratorFilter,
  AcceleratorUsage,
  AcceleratorView,
  ArqFilter,
  ArqView,
  AttachHandleT,
  DeviceT,
  ControlReads,
  HostUsage,
  HostView,
  PlacementStatusView,
  ReplyOf,
} from '../../model/index.js';
import type { PlacementPort, UsageWindows } from '../services/index.js';
import type { HostActor } from './host-actor.js';
import type { Supervisor } from './supervisor.js';

type RoleSeen = ReplyOf<'roles.seen'>[number];

/**
 * The conductor's reads: the last committed views of its hosts, accelerators and ARQs, and the
 * usage windows beside them. Nothing here waits for the database. The conductor's facade serves
 * its `ControlReads` with these very methods, and the call table's `reads.…` rows.
 */
export class FleetReads implements Required<ControlReads> {
  constructor(
    private readonly tree: Supervisor,
    private readonly usage: UsageWindows,
    private readonly placement?: PlacementPort,
  ) {}

  getHost(name: string): HostView {
    return this.host(name).view();
  }

  getAccelerator(id: string): AcceleratorView {
    return this.tree.acceleratorActor(id).view();
  }

  getAcceleratorByRp(rpUuid: string): AcceleratorView | undefined {
    return this.tree.acceleratorByRp(rpUuid)?.view();
  }

  getArq(uuid: string): ArqView {
    return this.tree.arqActor(uuid).view();
  }

  placementStatus(id: string): PlacementStatusView | undefined {
    return this.placement?.status(id);
  }

  listHosts(): HostView[] {
    return [...this.tree.hosts.values()].map((h) => h.view());
  }

  host(name: string): HostActor {
    const h = this.tree.hosts.get(name);
    if (!h) throw new NotFoundError('host.not_found', name);
    return h;
  }

  listAccelerators(filter: AcceleratorFilter = {}): AcceleratorView[] {
    const out: AcceleratorView[] = [];
    for (const h of this.tree.hosts.values()) {
      if (filter.host && h.name !== filter.host) continue;
      for (const a of h.accelerators.values()) {
        const v = a.view();
        if (filter.state && v.state !== filter.state) continue;
        if (filter.type && v.deviceType !== filter.type) continue;
        out.push(v);
      }
    }
    return out;
  }

  hostInventory(name: string): DeviceT[] {
    return this.host(name).inventory();
  }

  attachHandle(acceleratorId: string, handleUuid: string): AttachHandleT | undefined {
    return this.tree.findAccelerator(acceleratorId)?.deployable.attachHandles.find((x) => x.uuid === handleUuid);
  }

  acceleratorUsage(id: string): AcceleratorUsage {
    const a = this.tree.acceleratorActor(id);
    return { accelerator: id, host: a.host, samples: this.usage.samples(id) };
  }

  hostUsage(name: string): HostUsage {
    const h = this.host(name);
    return {
      host: name,
      devices: [...h.accelerators.keys()].map((id) => ({ accelerator: id, samples: this.usage.samples(id) })).filter((d) => d.samples.length > 0),
    };
  }

  /** The agents of this conductor's hosts, as it last heard them (the call table's `roles.seen`). */
  rolesSeen(): RoleSeen[] {
    return [...this.tree.hosts.values()].map((h) => {
      const v = h.view();
      return { role: 'agent', host: v.name, id: v.agentId, state: v.state, lastSeenAt: v.lastHeartbeatAt, drivers: v.drivers };
    });
  }

  listArqs(filter: ArqFilter = {}): ArqView[] {
    const out: ArqView[] = [];
    // By instance (Nova's resolved query, its delete): the index, not a walk of every ARQ.
    const candidates = filter.instanceUuid !== undefined ? this.tree.arqsOfInstance(filter.instanceUuid) : this.tree.arqs.values();
    for (const a of candidates) {
      const v = a.view();
      if (v.state === ArqStates.Deleted) continue;
      // An instance whose ARQs' delete was acknowledged has none left (Nova may bind anew).
      if (filter.instanceUuid !== undefined && (v.binding?.instanceUuid !== filter.instanceUuid || isDeleting(v.state))) continue;
      if (filter.projectId !== undefined && v.projectId !== filter.projectId) continue;
      out.push(v);
    }
    return out;
  }
}
