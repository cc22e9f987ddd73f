import type { AcceleratorView, ControlPlane, DeployableT, DeviceT } from '../../model/index.js';

export interface DeviceEntry {
  host: string;
  device: DeviceT;
}

export interface DeployableEntry extends DeviceEntry {
  deployable: DeployableT;
}

/**
 * Cyborg's device / deployable rows, read from the hosts' committed inventories. Our inventory
 * has no creation time, so the first time this process saw an object stands in for it.
 */
export class Catalogue {
  private readonly firstSeen = new Map<string, string>();

  constructor(private readonly control: ControlPlane) {}

  /** Each host's inventory array: replaced (never mutated) when the host reports a new one. */
  inventories(): { host: string; devices: DeviceT[] }[] {
    return this.control.listHosts().map((h) => ({ host: h.name, devices: this.control.hostInventory(h.name) }));
  }

  devices(): DeviceEntry[] {
    return this.inventories().flatMap(({ host, devices }) => devices.filter((d) => !d.stub).map((device) => ({ host, device })));
  }

  device(uuid: string): DeviceEntry | undefined {
    return this.devices().find((d) => d.device.uuid === uuid);
  }

  deployables(): DeployableEntry[] {
    return this.devices().flatMap((e) => e.device.deployables.map((deployable) => ({ ...e, deployable })));
  }

  deployable(uuid: string): DeployableEntry | undefined {
    return this.deployables().find((d) => d.deployable.uuid === uuid);
  }

  /** The accelerator actor's committed view of a deployable (state, program, updatedAt). */
  view(deployableUuid: string): AcceleratorView | undefined {
    try {
      return this.control.getAccelerator(deployableUuid);
    } catch {
      return undefined;
    }
  }

  createdAt(uuid: string): string {
    let at = this.firstSeen.get(uuid);
    if (!at) {
      at = new Date().toISOString();
      this.firstSeen.set(uuid, at);
    }
    return at;
  }
}
