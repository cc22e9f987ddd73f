export { evaluate, interpolate, type Check, type Credentials, type Target } from './checks.js';
export { formatCheck, parseRule, PolicySyntaxError } from './parser.js';
export {
  Enforcer,
  PolicyFileError,
  PolicyNotRegistered,
  tokenScope,
  type Decision,
  type EffectiveRule,
  type EnforcerOptions,
  type RuleDefault,
  type ScopeType,
} from './enforcer.js';
export { CYBORG_RULES, CYBORG_RULE_NAMES } from './cyborg-rules.js';
