import { stableId } from '../../ids/index.js';
import type { DesiredProvider } from './desired.js';

/**
 * Allocations Cyborg writes itself. Nova allocates on a device's provider when its scheduler
 * picks it for a boot; every other path that hands a device over — an operator's attach, an
 * instance attach, a program-on-bind for an instance Nova did not schedule there, a re-join that
 * adopts a running guest's device — has no such allocation, and without one Placement would
 * offer the device to the next boot. For each holder Nova does not cover, Cyborg holds one unit
 * under a consumer of its own ("hold" i of the provider: a name-based uuid of the provider and
 * the slot), never under the instance's uuid (a PUT there would replace Nova's allocations of
 * the instance). A free deletes exactly the holds that are no longer needed.
 */

/** Placement's user of Cyborg's own holds, and their consumer type (Placement 1.38+). */
export const HOLD_USER = 'cyborg';
export const HOLD_CONSUMER_TYPE = 'CYBORG_HOLD';

export function holdConsumer(rpUuid: string, slot: number): string {
  return stableId('placement-hold', rpUuid, String(slot));
}

/** How far past what a provider holds now to look for holds left from a larger device. */
const scanBound = (n: number): number => Math.max(64, 2 * n);

/** The slot of a hold consumer of this provider, or -1 for someone else's (Nova's) consumer. */
export function holdSlot(rpUuid: string, consumer: string, size: number): number {
  for (let i = 0; i < scanBound(size); i++) if (holdConsumer(rpUuid, i) === consumer) return i;
  return -1;
}

/** Consumer → resource class → amount, of one provider (`GET /resource_providers/{uuid}/allocations`). */
export type ProviderConsumers = Record<string, Record<string, number>>;

export interface HoldPlan {
  /** Holds to write (one unit of the class each), with the project of the holder they stand for. */
  add: { consumer: string; projectId: string }[];
  /** Holds no longer needed (or of another class): deleted. */
  remove: string[];
  /** What Placement will count as used of the class once the plan is applied. */
  usedAfter: number;
  /** Placement's usages per class now. */
  usages: Record<string, number>;
}

/**
 * The holds that make Placement count every holder of `d` once: per instance, what Nova's own
 * allocation for it on this provider does not cover.
 */
export function planHolds(d: DesiredProvider, consumers: ProviderConsumers): HoldPlan {
  const size = Math.max(d.total, d.holders.length);
  const own = new Map<number, { consumer: string; resources: Record<string, number> }>();
  const usages: Record<string, number> = {};
  let others = 0;
  for (const [consumer, resources] of Object.entries(consumers)) {
    for (const [rc, n] of Object.entries(resources)) usages[rc] = (usages[rc] ?? 0) + n;
    const slot = holdSlot(d.rpUuid, consumer, size);
    if (slot >= 0) own.set(slot, { consumer, resources });
    else others += resources[d.resourceClass] ?? 0;
  }
  const perInstance = new Map<string, { n: number; projectId: string }>();
  for (const h of d.holders) {
    const p = perInstance.get(h.instanceUuid);
    perInstance.set(h.instanceUuid, { n: (p?.n ?? 0) + 1, projectId: p?.projectId ?? h.projectId ?? HOLD_USER });
  }
  const uncovered: string[] = [];
  for (const [instance, { n, projectId }] of perInstance) {
    const byNova = consumers[instance]?.[d.resourceClass] ?? 0;
    for (let i = byNova; i < n; i++) uncovered.push(projectId);
  }
  const add: HoldPlan['add'] = [];
  const remove: string[] = [];
  uncovered.forEach((projectId, slot) => {
    const have = own.get(slot);
    if (have && have.resources[d.resourceClass] === 1 && Object.keys(have.resources).length === 1) return;
    if (have) remove.push(have.consumer); // another class or amount (the device was re-specified): written again
    add.push({ consumer: holdConsumer(d.rpUuid, slot), projectId });
  });
  for (const [slot, h] of own) if (slot >= uncovered.length) remove.push(h.consumer);
  return { add, remove, usedAfter: others + uncovered.length, usages };
}

/** A stable signature of who holds a device, to tell whether its holds need looking at again. */
export function holdersKey(d: DesiredProvider): string {
  return d.holders
    .map((h) => h.instanceUuid)
    .sort()
    .join(',');
}
