/**
 * How a device profile's request groups select resource providers, as Placement selects them:
 * the one implementation every place that matches a profile uses (the operator's instance
 * attach, `cyborg status upgrade-check`, the migration tests).
 */
export { readGroups, type GroupPolicy, type RequestGroup } from './groups.js';
export { describe, matchGroups, whyNot, type Candidate, type Match, type NoMatch } from './match.js';
export { canonicalFunctionId, FUNCTION_TRAIT_PREFIX, functionTrait } from './traits.js';
