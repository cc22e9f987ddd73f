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

  /**
   * The host that holds accelerator `id`, if any of ours does. An accelerator spawned since its
   * host was last indexed (its inventory's transitions are heard before the inventory's answer)
   * is found by a walk of the hosts, and indexed.
   */
  hostOf(id: string): string | undefined {
    const name = this.hostOfId.get(id);
    if (name !== undefined && this.hosts.get(name)?.accelerators.has(id)) return name;
    if (name !== undefined) this.hostOfId.delete(id);
    for (const h of this.hosts.values()) {
      const a = h.accelerators.get(id);
      if (a) {
        this.hostOfId.set(id, h.name);
        this.idOfRp.set(a.rpUuid, id);
        return h.name;
      }
    }
    return undefined;
  }

  /**
   * The host holding `id` by the index alone, never a walk: the inventory check asks it for every
   * deployable a report names, most of them new, and a walk each would make a fleet's
   * registration quadratic. Complete because every host is indexed once its inventory is applied.
   */
  indexedHostOf(id: string): string | undefined {
    const name = this.hostOfId.get(id);
    return name !== undefined && this.hosts.get(name)?.accelerators.has(id) ? name : undefined;
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
    // Not indexed yet (or never ours): a walk, as for an id.
    for (const h of this.hosts.values()) {
      for (const x of h.accelerators.values()) {
        if (x.rpUuid !== rpUuid) continue;
        this.hostOfId.set(x.id, h.name);
        this.idOfRp.set(rpUuid, x.id);
        return x;
      }
    }
    return undefined;
  }

  /** Forgets everything (hosts rebuilt in bulk): `addHost` is called again for each. */
  clear(): void {
    this.hostOfId.clear();
    this.idOfRp.clear();
  }
}
