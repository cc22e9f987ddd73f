import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { evaluate, referencedRules, type Check, type Credentials, type Target } from './checks.js';
import { formatCheck, parseRule, PolicySyntaxError } from './parser.js';

export type ScopeType = 'project' | 'system' | 'domain';

/** A rule registered in code (oslo.policy's RuleDefault / DocumentedRuleDefault). */
export interface RuleDefault {
  name: string;
  check: string;
  description: string;
  /** Token scopes the rule is meant for; checked when `enforceScope` is on. */
  scopeTypes?: ScopeType[];
  /** The rule this one replaced: OR-ed in while `enforceNewDefaults` is off and no override exists. */
  deprecated?: { check: string; reason: string };
  /** The API calls it guards, for `cyborg policy list`. */
  operations?: string[];
}

export interface EnforcerOptions {
  /** oslo.policy `enforce_new_defaults`: when false, deprecated rules are OR-ed with the new ones. */
  enforceNewDefaults: boolean;
  /** oslo.policy `enforce_scope`: a token of a scope the rule does not declare is refused. */
  enforceScope: boolean;
  /** `policy.yaml` (or .json) with overrides; missing is fine, as in oslo.policy. */
  policyFile?: string;
}

/** A policy file that cannot be used: names the file and, when it is one rule, the rule. */
export class PolicyFileError extends Error {
  constructor(
    message: string,
    readonly rule?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PolicyFileError';
  }
}

/** A rule that is not registered (a programming error, as oslo.policy's PolicyNotRegistered). */
export class PolicyNotRegistered extends Error {
  constructor(readonly rule: string) {
    super(`policy rule "${rule}" is not registered`);
    this.name = 'PolicyNotRegistered';
  }
}

export interface EffectiveRule {
  name: string;
  check: string;
  /** `default`, `default or deprecated` (enforce_new_defaults off), `file` (policy.yaml), `file only` (a rule with no default). */
  source: 'default' | 'default or deprecated' | 'file' | 'file only';
  description?: string;
  scopeTypes?: ScopeType[];
  operations?: string[];
}

interface Loaded {
  checks: Map<string, Check>;
  effective: EffectiveRule[];
}

/** The scope of the caller's token, as oslo.policy reads it from the credentials. */
export function tokenScope(creds: Credentials): ScopeType {
  if (creds.system_scope) return 'system';
  if (creds.domain_id && !creds.project_id) return 'domain';
  return 'project';
}

export type Decision = { ok: true } | { ok: false; reason: 'policy' | 'scope' };

/**
 * oslo.policy's Enforcer: defaults registered in code, overrides from a policy file, the
 * `enforce_new_defaults` and `enforce_scope` switches. `load()` throws on a bad file (start-up
 * stops, naming the rule); `reload()` keeps the rules in force when the new file is bad.
 */
export class Enforcer {
  private readonly defaults = new Map<string, RuleDefault>();
  private loaded: Loaded;
  /**
   * The configured policy file was not there at the last (re)load, so only the defaults in code
   * apply. oslo.policy tolerates that and so do we, but a misspelt path must not pass unseen: the
   * caller warns with it.
   */
  fileMissing = false;

  constructor(
    defaults: readonly RuleDefault[],
    readonly options: EnforcerOptions,
  ) {
    for (const d of defaults) this.defaults.set(d.name, d);
    this.loaded = this.build();
  }

  /** Reads the policy file and replaces the rules; throws PolicyFileError and keeps the old ones if it is bad. */
  load(): void {
    this.loaded = this.build();
  }

  /** SIGHUP: like load(), but a bad file only returns the error (the rules in force stay). */
  reload(): PolicyFileError | undefined {
    try {
      this.load();
      return undefined;
    } catch (err) {
      if (err instanceof PolicyFileError) return err;
      throw err;
    }
  }

  has(rule: string): boolean {
    return this.loaded.checks.has(rule);
  }

  /** Whether the caller may do `rule` on `target`. */
  decide(rule: string, target: Target, creds: Credentials): Decision {
    const check = this.loaded.checks.get(rule);
    if (!check) throw new PolicyNotRegistered(rule);
    const scopes = this.defaults.get(rule)?.scopeTypes;
    if (this.options.enforceScope && scopes && !scopes.includes(tokenScope(creds))) return { ok: false, reason: 'scope' };
    const lookup = (name: string): Check | undefined => this.loaded.checks.get(name);
    return evaluate(check, target, creds, lookup, new Set([rule])) ? { ok: true } : { ok: false, reason: 'policy' };
  }

  enforce(rule: string, target: Target, creds: Credentials): boolean {
    return this.decide(rule, target, creds).ok;
  }

  /** Every rule as it is enforced now, sorted by name. */
  effective(): EffectiveRule[] {
    return this.loaded.effective;
  }

  private readFile(): Map<string, string> {
    const file = this.options.policyFile;
    const out = new Map<string, string>();
    this.fileMissing = false;
    if (!file) return out;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        this.fileMissing = true;
        return out;
      }
      throw new PolicyFileError(`policy file ${file}: ${(err as Error).message}`, undefined, { cause: err });
    }
    let doc: unknown;
    try {
      doc = parseYaml(text);
    } catch (err) {
      throw new PolicyFileError(`policy file ${file} is not valid YAML: ${(err as Error).message}`, undefined, { cause: err });
    }
    if (doc === null || doc === undefined) return out;
    if (typeof doc !== 'object' || Array.isArray(doc)) throw new PolicyFileError(`policy file ${file} must map rule names to rule strings`);
    for (const [name, value] of Object.entries(doc as Record<string, unknown>)) {
      if (typeof value !== 'string') throw new PolicyFileError(`policy file ${file}: rule "${name}" must be a string, got ${JSON.stringify(value)}`, name);
      out.set(name, value);
    }
    return out;
  }

  private build(): Loaded {
    const overrides = this.readFile();
    const checks = new Map<string, Check>();
    const effective: EffectiveRule[] = [];
    const file = this.options.policyFile ?? 'policy file';
    const parse = (name: string, text: string, from: string): Check => {
      try {
        return parseRule(name, text);
      } catch (err) {
        if (err instanceof PolicySyntaxError) throw new PolicyFileError(`${from}: ${err.message}`, name, { cause: err });
        throw err;
      }
    };
    for (const d of this.defaults.values()) {
      const meta = { description: d.description, ...(d.scopeTypes ? { scopeTypes: d.scopeTypes } : {}), ...(d.operations ? { operations: d.operations } : {}) };
      const override = overrides.get(d.name);
      if (override !== undefined) {
        checks.set(d.name, parse(d.name, override, file));
        effective.push({ name: d.name, check: override, source: 'file', ...meta });
        continue;
      }
      const now = parse(d.name, d.check, 'default');
      if (d.deprecated && !this.options.enforceNewDefaults) {
        const old = parse(d.name, d.deprecated.check, 'default');
        const both: Check = { kind: 'or', checks: [now, old] };
        checks.set(d.name, both);
        effective.push({ name: d.name, check: formatCheck(both), source: 'default or deprecated', ...meta });
      } else {
        checks.set(d.name, now);
        effective.push({ name: d.name, check: d.check, source: 'default', ...meta });
      }
    }
    for (const [name, text] of overrides) {
      if (this.defaults.has(name)) continue;
      checks.set(name, parse(name, text, file));
      effective.push({ name, check: text, source: 'file only' });
    }
    this.validate(checks);
    effective.sort((a, b) => a.name.localeCompare(b.name));
    return { checks, effective };
  }

  /** oslo.policy's check_rules: every `rule:` reference exists and no rule refers back to itself. */
  private validate(checks: Map<string, Check>): void {
    for (const [name, check] of checks) {
      for (const ref of referencedRules(check)) {
        if (!checks.has(ref)) throw new PolicyFileError(`policy rule "${name}" refers to undefined rule "${ref}"`, name);
      }
    }
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (name: string, path: string[]): void => {
      if (state.get(name) === 'done') return;
      if (state.get(name) === 'visiting') throw new PolicyFileError(`policy rule "${name}" refers to itself: ${[...path, name].join(' -> ')}`, name);
      state.set(name, 'visiting');
      for (const ref of referencedRules(checks.get(name)!)) visit(ref, [...path, name]);
      state.set(name, 'done');
    };
    for (const name of checks.keys()) visit(name, []);
  }
}
