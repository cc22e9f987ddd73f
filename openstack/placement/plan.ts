import type { Inventories, InventoryRecord } from './client.js';
import { FUNCTION_TRAIT_PREFIX, type DesiredProvider } from './desired.js';

/**
 * Pure planning: from what Placement holds and what an accelerator asks for, the writes that
 * make them agree — without ever taking capacity from under an allocation.
 */

export type FlagCode = 'held_for_allocations' | 'removed_but_allocated' | 'missing_from_discovery' | 'stale_class_allocated';

/** Something the sync did not do (or did differently) to protect an allocation. */
export interface SyncFlag {
  code: FlagCode;
  message: string;
}

export interface InventoryPlan {
  /** The full inventory set to PUT, or null when Placement already holds it. */
  write: Inventories | null;
  flags: SyncFlag[];
}

/** Placement's defaults for the fields Cyborg leaves out. */
function record(total: number, reserved: number): InventoryRecord {
  return { total, reserved, min_unit: 1, max_unit: total, step_size: 1, allocation_ratio: 1 };
}

/** An inventory kept for its allocations: never shrunk, everything else reserved. */
function held(r: InventoryRecord, used: number): InventoryRecord {
  const total = Math.max(r.total, used);
  return { ...r, total, reserved: Math.max(0, total - used) };
}

const capacity = (r: InventoryRecord | undefined): number => (r ? (r.total - r.reserved) * r.allocation_ratio : 0);

/**
 * True when the desired inventory would leave less room than Placement has now, so usages must
 * be read first (a growing or equal inventory can never strand an allocation).
 */
export function needsUsages(d: DesiredProvider, actual: Inventories): boolean {
  for (const [rc, r] of Object.entries(actual)) {
    if (rc !== d.resourceClass) return true;
    const reserved = d.usable ? 0 : d.total;
    if (d.total < r.total || d.total - reserved < capacity(r)) return true;
  }
  return false;
}

/**
 * The inventory an accelerator should have: `{RC: {total, max_unit: total, reserved}}` with
 * reserved = 0 when usable, else everything not allocated (Cyborg reserves all of it on device
 * disable; nothing is allocated then). Never below what is allocated: a total that would drop
 * under the usage is held at the usage, and a resource class that went away but still has
 * allocations is kept at its usage — each with a flag.
 */
export function planInventories(d: DesiredProvider, actual: Inventories, usages: Record<string, number> = {}): InventoryPlan {
  const flags: SyncFlag[] = [];
  const used = usages[d.resourceClass] ?? 0;
  let total = d.total;
  if (used > total) {
    flags.push({ code: 'held_for_allocations', message: `${d.resourceClass} total held at ${used} (allocated) instead of ${d.total}` });
    total = used;
  }
  const target: Inventories = { [d.resourceClass]: record(total, d.usable ? 0 : Math.max(0, total - used)) };
  for (const [rc, r] of Object.entries(actual)) {
    if (rc === d.resourceClass || !usages[rc]) continue;
    const u = usages[rc]!;
    flags.push({ code: 'stale_class_allocated', message: `${rc} is no longer this deployable's class but ${u} is allocated: kept, reserved` });
    target[rc] = held(r, u);
  }
  if (d.missing) flags.push({ code: 'missing_from_discovery', message: 'discovery no longer reports it; an instance holds it: inventory kept, reserved' });
  return { write: sameInventories(target, actual) ? null : target, flags };
}

/**
 * What a provider whose accelerator is gone keeps while something is allocated on it: every
 * class stays (never shrunk), everything not allocated is reserved so nothing new lands there.
 */
export function planHold(actual: Inventories, usages: Record<string, number>): InventoryPlan {
  const target: Inventories = {};
  for (const [rc, r] of Object.entries(actual)) target[rc] = held(r, usages[rc] ?? 0);
  const allocated = Object.entries(usages)
    .filter(([, n]) => n > 0)
    .map(([rc, n]) => `${n} ${rc}`)
    .join(', ');
  return {
    write: sameInventories(target, actual) ? null : target,
    flags: [{ code: 'removed_but_allocated', message: `the accelerator is gone but ${allocated} is allocated in Placement: provider kept, reserved` }],
  };
}

export interface TraitPlan {
  /** The full trait set to PUT, or null when Placement already holds exactly it. */
  write: string[] | null;
  /** Traits the provider loses (stale ones included). */
  removed: string[];
}

/** Exactly the desired traits: stale ones (an old function id, say) go, missing ones come back. */
export function planTraits(desired: string[], actual: string[]): TraitPlan {
  const want = new Set(desired);
  const have = new Set(actual);
  const removed = actual.filter((t) => !want.has(t));
  const same = removed.length === 0 && desired.every((t) => have.has(t));
  return { write: same ? null : [...want].sort(), removed };
}

/** Removed function traits whose definitions Cyborg deletes too (409 if still used elsewhere). */
export function functionTraitsToDelete(removed: string[]): string[] {
  return removed.filter((t) => t.startsWith(FUNCTION_TRAIT_PREFIX));
}

export function sameInventories(a: Inventories, b: Inventories): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((rc) => {
    const x = a[rc]!;
    const y = b[rc];
    return (
      y !== undefined &&
      x.total === y.total &&
      x.reserved === y.reserved &&
      x.min_unit === y.min_unit &&
      x.max_unit === y.max_unit &&
      x.step_size === y.step_size &&
      x.allocation_ratio === y.allocation_ratio
    );
  });
}
