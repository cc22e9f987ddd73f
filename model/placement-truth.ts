import type { Allocation, AcceleratorView } from './accelerator.js';

/**
 * What Placement must say about one accelerator: the one answer both the Placement sync writes
 * and `cyborg capacity` reads, so the two can never disagree.
 *
 * - `inventory`: the provider's inventory total (its attach handles, at least 1; with none, that
 *   one unit is reserved).
 * - `used`: every consumer that holds the device, whoever handed it over — a Nova boot (Nova's
 *   allocation for the instance), an operator's attach, an instance attach, a program-on-bind or
 *   a re-join's adoption (an allocation Cyborg writes itself, see openstack/placement/holds.ts).
 *   A device held and not shown as used in Placement is offered twice.
 * - `reserved`: while the device is out of service (not enabled, error, quarantined, marked,
 *   drained, offline, missing) everything not used.
 * - `quarantined` / `maintenance`: why part of `reserved` is reserved (health first).
 */
export interface PlacementTruth {
  resourceClass: string | null;
  inventory: number;
  /** The inventory as Placement keeps it: never below what is used. */
  total: number;
  used: number;
  reserved: number;
  quarantined: number;
  maintenance: number;
  free: number;
  /** Enabled and nothing takes it out of service: Placement reserves none of it. */
  inService: boolean;
  /** Who holds it: each must be a consumer of one unit in Placement. */
  holders: Allocation[];
}

export function placementTruthOf(a: AcceleratorView): PlacementTruth {
  const inventory = Math.max(1, a.capacity);
  const used = a.allocations.length;
  const total = Math.max(inventory, used);
  // The machine's `usable` tag: enabled (or being reprogrammed, attached, detached from an enabled
  // state); `reserved` is a quarantine for health or a maintenance mark; a card discovery lost is
  // out of service too (attached instances keep running).
  // A deployable whose driver has no handle it can serve now (every MIG instance of its profile
  // taken by an mdev it did not make, a VF past its type's max_instance) keeps its provider with
  // the one unit Placement needs, reserved: nothing is offered that a bind could not serve.
  const inService = a.tags.includes('usable') && !a.tags.includes('reserved') && !a.missing && a.capacity > 0;
  const idle = total - used;
  const reserved = inService ? 0 : idle;
  const quarantined = !inService && a.health?.status === 'quarantined' ? idle : 0;
  const maintenance = !inService && !quarantined && a.maintenance ? idle : 0;
  return {
    resourceClass: a.resourceClass,
    inventory,
    total,
    used,
    reserved,
    quarantined,
    maintenance,
    free: inService ? idle : 0,
    inService,
    holders: a.allocations,
  };
}
