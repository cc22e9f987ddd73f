import type { AcceleratorActor } from './accelerator-actor.js';
import type { HostActor } from './host-actor.js';

/**
 * Where each accelerator lives, by its id and by its Placement resource provider (how Nova names
 * a deployable in a bind): a bind or an operator call finds its actor with two map lookups, not a
 * walk of the fleet. Entries are hints: each lookup checks the host still has that accelerator
 * (a host released, rebuilt or adopted leaves stale entries, which are dropped when met).
 */
export class AcceleratorIndex {
  private readonly hostOfId = new Map<string, string>();
  private readonly idOfRp = new Map<string, string>();

  constructor(private readonly hosts: ReadonlyMap<string, HostActor>) {}

  /** Records every accelerator of `host` (after it is built, adopted, or has applied an inventory). */
  addHost(host: HostActor): void {
    for (const a of host.accelerators.values()) {
      this.hostOfId.set(a.id, host.name);
      this.idOfRp.set(a.rpUuid, a.id);
    }
  }

  /** The host that holds accelerator `id`, if any of ours does. */
  hostOf(id: string): string | undefined {
    const name = this.hostOfId.get(id);
    if (name !== undefined && this.hosts.get(name)?.accelerators.has(id)) return name;
    if (name !== undefined) this.hostOfId.delete(id);
    return undefined;
  }

  byId(id: string): AcceleratorActor | undefined {
    const name = this.hostOf(id);
    return name === undefined ? undefined : this.hosts.get(name)?.accelerators.get(id);
  }

  byRp(rpUuid: string): AcceleratorActor | undefined {
    const id = this.idOfRp.get(rpUuid);
    const a = id === undefined ? undefined : this.byId(id);
    if (a && a.rpUuid === rpUuid) return a;
    if (id !== undefined) this.idOfRp.delete(rpUuid);
    return undefined;
  }

  /** Forgets everything (hosts rebuilt in bulk): `addHost` is called again for each. */
  clear(): void {
    this.hostOfId.clear();
    this.idOfRp.clear();
  }
}
