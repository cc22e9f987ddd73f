// The door of openstack/placement/: other rooms import it through this file only (test/architecture.test.ts).
export {
  type Inventories,
  type InventoryRecord,
  microversionAtLeast,
  Microversions,
  MIN_MICROVERSION,
  PlacementClient,
  placementClientFromConfig,
  type PlacementClientOptions,
  type Provider,
} from './client.js';
export { type Desired, desiredOf, type DesiredProvider, FUNCTION_TRAIT_PREFIX, functionTrait, OWNER_TRAIT } from './desired.js';
export { isPlacementError, type PlacementCode, PlacementCodes, PlacementError, type PlacementErrorDetails } from './errors.js';
export { driftGauge, type DriftKind, type DriftSource, passCounter, repairCounter, requestCounter, trackDrift } from './metrics.js';
export {
  type FlagCode,
  functionTraitsToDelete,
  type InventoryPlan,
  needsUsages,
  planHold,
  planInventories,
  planTraits,
  sameInventories,
  type SyncFlag,
  type TraitPlan,
} from './plan.js';
export { type ProviderOutcome, Reconciler, type ReconcilerOptions, type StaleOutcome, type SyncState } from './reconciler.js';
export { RootProviderMissingError, RootProviders, type RootProvidersOptions } from './roots.js';
export { HOLD_CONSUMER_TYPE, HOLD_USER, holdConsumer, holdersKey, type HoldPlan, holdSlot, planHolds, type ProviderConsumers } from './holds.js';
