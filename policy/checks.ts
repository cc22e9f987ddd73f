/**
 * The checks of oslo.policy's rule language, as a tree, and their evaluation against a target
 * (what the action is on) and credentials (who asks). Semantics follow oslo.policy's `_checks`.
 */
export type Check =
  | { kind: 'true' }
  | { kind: 'false' }
  | { kind: 'not'; check: Check }
  | { kind: 'and'; checks: Check[] }
  | { kind: 'or'; checks: Check[] }
  | { kind: 'rule'; name: string }
  | { kind: 'role'; match: string }
  /** `field:match`: `field` is a path into the credentials (`a.b`) or, quoted / a number / True / False / None, a literal. */
  | { kind: 'generic'; field: string; match: string; literal?: string };

/** The caller's credentials as oslo.context's `to_policy_values()` gives them. */
export interface Credentials {
  roles: string[];
  user_id?: string | null;
  project_id?: string | null;
  domain_id?: string | null;
  user_domain_id?: string | null;
  project_domain_id?: string | null;
  /** `all` for a system-scoped token. */
  system_scope?: string | null;
  is_admin?: boolean;
  service_roles?: string[];
  service_user_id?: string | null;
  service_project_id?: string | null;
  [field: string]: unknown;
}

export type Target = Record<string, unknown>;

/** Resolves `rule:<name>`; undefined for an unknown rule (which then fails, as in oslo.policy). */
export type RuleLookup = (name: string) => Check | undefined;

/** Python's `str()` of a value, which is what oslo.policy compares. */
export function pyStr(v: unknown): string {
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v === null || v === undefined) return 'None';
  return String(v);
}

/**
 * Python's `match % target` for `%(key)s` and `%%`: undefined where a key is missing (oslo.policy
 * then fails the check rather than raising).
 */
export function interpolate(match: string, target: Target): string | undefined {
  if (!match.includes('%')) return match;
  let missing = false;
  const out = match.replace(/%(?:\(([^)]*)\)s|%)/g, (whole, key: string | undefined) => {
    if (whole === '%%') return '%';
    if (!Object.prototype.hasOwnProperty.call(target, key!)) {
      missing = true;
      return '';
    }
    return pyStr(target[key!]);
  });
  return missing ? undefined : out;
}

function findIn(value: unknown, path: string[], match: string): boolean {
  if (path.length === 0) return Array.isArray(value) ? value.some((v) => match === pyStr(v)) : match === pyStr(value);
  if (Array.isArray(value)) return value.some((v) => findIn(v, path, match));
  if (value && typeof value === 'object') {
    const [head, ...rest] = path;
    if (!Object.prototype.hasOwnProperty.call(value, head!)) return false;
    return findIn((value as Record<string, unknown>)[head!], rest, match);
  }
  return false;
}

/** Evaluates a check; `seen` guards against rules that refer to themselves. */
export function evaluate(check: Check, target: Target, creds: Credentials, rules: RuleLookup, seen: ReadonlySet<string> = new Set()): boolean {
  switch (check.kind) {
    case 'true':
      return true;
    case 'false':
      return false;
    case 'not':
      return !evaluate(check.check, target, creds, rules, seen);
    case 'and':
      return check.checks.every((c) => evaluate(c, target, creds, rules, seen));
    case 'or':
      return check.checks.some((c) => evaluate(c, target, creds, rules, seen));
    case 'rule': {
      const rule = rules(check.name);
      if (!rule || seen.has(check.name)) return false;
      return evaluate(rule, target, creds, rules, new Set([...seen, check.name]));
    }
    case 'role': {
      const want = interpolate(check.match, target);
      if (want === undefined) return false;
      return creds.roles.some((r) => r.toLowerCase() === want.toLowerCase());
    }
    case 'generic': {
      const want = interpolate(check.match, target);
      if (want === undefined) return false;
      if (check.literal !== undefined) return want === check.literal;
      return findIn(creds, check.field.split('.'), want);
    }
  }
}

/** The rule names a check refers to (`rule:x`), for load-time validation. */
export function referencedRules(check: Check, out: Set<string> = new Set()): Set<string> {
  if (check.kind === 'rule') out.add(check.name);
  else if (check.kind === 'not') referencedRules(check.check, out);
  else if (check.kind === 'and' || check.kind === 'or') for (const c of check.checks) referencedRules(c, out);
  return out;
}
