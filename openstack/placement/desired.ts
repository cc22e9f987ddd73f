import { placementTruthOf, type AcceleratorView } from '../../model/index.js';
import { FUNCTION_TRAIT_PREFIX, functionTrait } from '../../placement-query/index.js';
import { AcceleratorStates } from '../../machines/index.js';

/** The trait Cyborg puts on every provider it owns (os-traits `OWNER_CYBORG`). */
export const OWNER_TRAIT = 'OWNER_CYBORG';
/** Cyborg's prefix for the trait that says which function an FPGA is programmed with. */
export { FUNCTION_TRAIT_PREFIX };

/** What Placement should hold for one accelerator. */
export interface DesiredProvider {
  id: string;
  host: string;
  rpUuid: string;
  name: string;
  /** false: the accelerator is gone (`removed`); its provider should be deleted. */
  present: boolean;
  resourceClass: string;
  total: number;
  usable: boolean;
  /** Discovery lost it while it is held: kept and flagged. */
  missing: boolean;
  traits: string[];
  /** Who holds it (placementTruthOf): each counted once in Placement's usage of the provider. */
  holders: { instanceUuid: string; projectId?: string }[];
}

/** An accelerator's desired provider, or why it cannot have one. */
export type Desired = { id: string; host: string; rpUuid: string } & ({ ok: true; desired: DesiredProvider } | { ok: false; reason: string });

/** Cyborg's function trait for a programmed FPGA, in the one spelling discovery uses too (placement-query/traits.ts). */
export { functionTrait };

/**
 * The provider an accelerator view asks for: one per deployable, named and uuid'd as Cyborg
 * does (`view.rpUuid` = uuid3(DNS, name)), inventory of its resource class sized by its attach
 * handles, traits from its `trait*` attributes plus OWNER_CYBORG, the function trait of what it
 * was programmed with in place of any function trait discovery reported.
 */
export function desiredOf(view: AcceleratorView): Desired {
  if (!view.resourceClass) {
    return {
      ok: false,
      id: view.id,
      host: view.host,
      rpUuid: view.rpUuid,
      reason: `deployable ${view.name} has no "rc" attribute: no resource class to report`,
    };
  }
  // A card programmed with a known function says that one only, as Cyborg swaps it after a
  // programming: every CUSTOM_FPGA_FUNCTION_ID trait goes, the new function's is added.
  const fn = view.program?.functionId;
  const traits = new Set([...(fn ? view.traits.filter((t) => !t.startsWith(FUNCTION_TRAIT_PREFIX)) : view.traits), OWNER_TRAIT]);
  if (fn) traits.add(functionTrait(view.driver, fn));
  const truth = placementTruthOf(view);
  return {
    id: view.id,
    host: view.host,
    rpUuid: view.rpUuid,
    ok: true,
    desired: {
      id: view.id,
      host: view.host,
      rpUuid: view.rpUuid,
      name: view.name,
      present: view.state !== AcceleratorStates.removed,
      resourceClass: view.resourceClass,
      total: truth.inventory,
      // Out of service keeps the inventory but reserves it (placementTruthOf says when).
      usable: truth.inService,
      missing: view.missing,
      traits: [...traits].sort(),
      holders: truth.holders.map((h) => ({ instanceUuid: h.instanceUuid, ...(h.projectId ? { projectId: h.projectId } : {}) })),
    },
  };
}
