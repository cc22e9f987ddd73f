import { CyborgError } from '../../errors/index.js';
import { Microversions, type PlacementClient } from '../../openstack/placement/index.js';

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
  return async (rpUuid) => {
    const r = await client.call<{ allocations: Record<string, { resources: Record<string, number> }> } | null>(
      'GET',
      `/resource_providers/${rpUuid}/allocations`,
      { microversion: Microversions.base, ok: [404] },
    );
    return Object.fromEntries(Object.entries(r?.allocations ?? {}).map(([consumer, a]) => [consumer, a.resources]));
  };
}

/**
 * Never below an allocation: refuses `action` on an accelerator while Placement holds an
 * allocation on its provider, whoever made it: Nova may have claimed it for an instance whose
 * ARQ is not bound yet, which Cyborg's own records cannot know. 409 `accelerator.allocated`
 * naming the consumers. When Placement cannot be asked the error of the call goes up
 * (`placement.unavailable`, 503): an unknown answer is no permission. Without Placement
 * configured there is no lookup, and only Cyborg's own allocations count (the machine's guards).
 */
export async function assertNotAllocated(lookup: ProviderAllocations | null, accelerator: { id: string; rpUuid: string }, action: string): Promise<void> {
  if (!lookup || !isGuarded(action)) return;
  const allocations = await lookup(accelerator.rpUuid);
  const consumers = Object.keys(allocations).sort();
  if (consumers.length === 0) return;
  throw new CyborgError(
    'accelerator.allocated',
    `accelerator ${accelerator.id} is allocated in Placement to consumer ${consumers.join(', ')}: ${action.toLowerCase()} refused until that allocation is gone`,
    { acceleratorId: accelerator.id, rpUuid: accelerator.rpUuid, action, consumers, allocations },
  );
}
