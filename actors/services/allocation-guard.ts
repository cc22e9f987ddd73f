import { CyborgError } from '../../errors/index.js';
import { holdSlot, type PlacementClient } from '../../openstack/placement/index.js';

/** Consumer uuid → resource class → amount, of one resource provider, as Placement holds them. */
export type ProviderAllocations = (rpUuid: string) => Promise<Record<string, Record<string, number>>>;

/**
 * The operator actions that would pull a device from under its user: disabling it (Placement
 * reserves it), reprogramming it, re-laying out its VFs or MIG instances, removing it.
 */
export type GuardedAction = 'DISABLE' | 'PROGRAM' | 'REMOVE' | 'SET_VF_COUNT' | 'APPLY_MIG_LAYOUT';

const GUARDED: ReadonlySet<string> = new Set<GuardedAction>(['DISABLE', 'PROGRAM', 'REMOVE', 'SET_VF_COUNT', 'APPLY_MIG_LAYOUT']);

export const isGuarded = (action: string): action is GuardedAction => GUARDED.has(action);

/** A provider's allocations read from Placement (`GET /resource_providers/{uuid}/allocations`); a provider Placement does not know holds none. */
export function placementAllocations(client: PlacementClient): ProviderAllocations {
  return (rpUuid) => client.providerAllocations(rpUuid);
}

/**
 * Never below an allocation: refuses `action` on an accelerator while Placement holds an
 * allocation on its provider, whoever made it: Nova may have claimed it for an instance whose
 * ARQ is not bound yet, which Cyborg's own records cannot know. 409 `accelerator.allocated`
 * naming the consumers. When Placement cannot be asked the error of the call goes up
 * (`placement.unavailable`, 503): an unknown answer is no permission. Without Placement
 * configured there is no lookup, and only Cyborg's own allocations count (the machine's guards).
 */
export async function assertNotAllocated(
  lookup: ProviderAllocations | null,
  accelerator: { id: string; rpUuid: string; capacity?: number },
  action: string,
): Promise<void> {
  if (!lookup || !isGuarded(action)) return;
  const allocations = await lookup(accelerator.rpUuid);
  // Cyborg's own holds (openstack/placement/holds.ts) stand for the holders its machine knows:
  // the machine's guards refuse while one is held, and a hold left after a detach goes at the
  // sync's next pass; neither is a consumer Cyborg cannot see.
  const size = Math.max(1, accelerator.capacity ?? 1);
  const consumers = Object.keys(allocations)
    .filter((c) => holdSlot(accelerator.rpUuid, c, size) < 0)
    .sort();
  if (consumers.length === 0) return;
  throw new CyborgError(
    'accelerator.allocated',
    `accelerator ${accelerator.id} is allocated in Placement to consumer ${consumers.join(', ')}: ${action.toLowerCase()} refused until that allocation is gone`,
    { acceleratorId: accelerator.id, rpUuid: accelerator.rpUuid, action, consumers, allocations },
  );
}
