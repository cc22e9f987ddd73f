import { Type, type Static } from '@sinclair/typebox';
import type { AcceleratorView } from './accelerator.js';
import { AcceleratorStates } from '../machines/index.js';
import { placementTruthOf } from './placement-truth.js';

/**
 * Free capacity at a glance: attach slots (Placement's units) by resource class, per host and for
 * the fleet, in the same terms Placement keeps them — `total` is the providers' inventory,
 * `used` their allocations, `reserved` what Cyborg reserves (a device not in service: everything
 * not allocated), `free = total - used - reserved`. `quarantined` and `maintenance` say why part
 * of `reserved` is reserved (health first, then a maintenance mark or drain); the rest of it is
 * devices not enabled, in error, offline or missing.
 */
export const CapacityCountsSchema = Type.Object({
  resourceClass: Type.String(),
  accelerators: Type.Integer({ description: 'accelerators (deployables) counted' }),
  total: Type.Integer(),
  used: Type.Integer(),
  reserved: Type.Integer({ description: 'not allocated and not in service (quarantined + maintenance + not enabled, error, offline, missing)' }),
  quarantined: Type.Integer({ description: 'part of reserved: quarantined for health' }),
  maintenance: Type.Integer({ description: 'part of reserved: marked for maintenance or drained (and healthy)' }),
  free: Type.Integer(),
});

export const CapacitySchema = Type.Object({
  fleet: Type.Array(CapacityCountsSchema),
  hosts: Type.Array(Type.Object({ host: Type.String(), classes: Type.Array(CapacityCountsSchema) })),
  /** Fleet-wide, per trait an accelerator reports, by resource class. */
  traits: Type.Array(Type.Composite([Type.Object({ trait: Type.String() }), CapacityCountsSchema])),
});

export type CapacityCounts = Static<typeof CapacityCountsSchema>;
export type Capacity = Static<typeof CapacitySchema>;

/** One accelerator's slots, as Placement's inventory and usage of its provider hold them: what Placement must say (placement-truth.ts). */
export function slotsOf(a: AcceleratorView): Omit<CapacityCounts, 'resourceClass' | 'accelerators'> {
  const { total, used, reserved, quarantined, maintenance, free } = placementTruthOf(a);
  return { total, used, reserved, quarantined, maintenance, free };
}

const KEYS = ['accelerators', 'total', 'used', 'reserved', 'quarantined', 'maintenance', 'free'] as const;

function add(into: Map<string, CapacityCounts>, key: string, rc: string, a: AcceleratorView): void {
  let c = into.get(key);
  if (!c) into.set(key, (c = { resourceClass: rc, accelerators: 0, total: 0, used: 0, reserved: 0, quarantined: 0, maintenance: 0, free: 0 }));
  const s = { ...slotsOf(a), accelerators: 1 };
  for (const k of KEYS) c[k] += s[k];
}

const byClass = (a: CapacityCounts, b: CapacityCounts): number => a.resourceClass.localeCompare(b.resourceClass);

/**
 * The capacity of `accelerators` (removed ones and those without a resource class are not in
 * Placement and not counted). One pass over the views.
 */
export function capacityOf(accelerators: Iterable<AcceleratorView>): Capacity {
  const fleet = new Map<string, CapacityCounts>();
  const hosts = new Map<string, Map<string, CapacityCounts>>();
  const traits = new Map<string, CapacityCounts & { trait: string }>();
  for (const a of accelerators) {
    if (a.state === AcceleratorStates.removed || !a.resourceClass) continue;
    const rc = a.resourceClass;
    add(fleet, rc, rc, a);
    let h = hosts.get(a.host);
    if (!h) hosts.set(a.host, (h = new Map()));
    add(h, rc, rc, a);
    for (const trait of a.traits) {
      const key = `${trait}\u0000${rc}`;
      if (!traits.has(key))
        traits.set(key, { trait, resourceClass: rc, accelerators: 0, total: 0, used: 0, reserved: 0, quarantined: 0, maintenance: 0, free: 0 });
      add(traits as Map<string, CapacityCounts>, key, rc, a);
    }
  }
  return {
    fleet: [...fleet.values()].sort(byClass),
    hosts: [...hosts.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([host, m]) => ({ host, classes: [...m.values()].sort(byClass) })),
    traits: [...traits.values()].sort((a, b) => a.trait.localeCompare(b.trait) || byClass(a, b)),
  };
}
