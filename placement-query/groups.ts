import { CyborgError } from '../errors/index.js';

/**
 * A device profile's request groups as Placement reads them once Nova has turned each into a
 * numbered granular group (`resources<N>:<RC>=<n>`, `trait<N>:<T>=required|forbidden`): what one
 * provider must have. `accel:` keys are Cyborg's own (programming) and ask nothing of Placement.
 */
export interface RequestGroup {
  /** Its index among the profile's groups (Nova's request group suffix is derived from it). */
  index: number;
  /** Every `resources:` key: resource class → amount. */
  resources: ReadonlyMap<string, number>;
  required: ReadonlySet<string>;
  forbidden: ReadonlySet<string>;
  /** `accel:` keys, as given. */
  accel: Readonly<Record<string, string>>;
}

/** Placement's `group_policy`: `isolate` puts each group on another provider, `none` lets them share one. */
export type GroupPolicy = 'isolate' | 'none';

const bad = (field: string, message: string): CyborgError => new CyborgError('request.invalid', message, { field });

/**
 * Reads a profile's groups, refusing (400 naming the field) what Placement would refuse or
 * silently misread: a `resources:` amount that is not a positive integer, a trait value other
 * than `required` / `forbidden`, a trait both required and forbidden, a group asking for nothing.
 * Names are trimmed and upper-cased (one spelling per trait and class, whatever an older client sent).
 */
export function readGroups(groups: readonly Readonly<Record<string, string>>[]): RequestGroup[] {
  if (groups.length === 0) throw bad('groups', 'a device profile needs at least one request group');
  return groups.map((g, index) => {
    const resources = new Map<string, number>();
    const required = new Set<string>();
    const forbidden = new Set<string>();
    const accel: Record<string, string> = {};
    for (const [rawKey, rawValue] of Object.entries(g)) {
      const field = `groups[${index}].${rawKey}`;
      const m = /^(resources|trait|accel):(.+)$/.exec(rawKey.trim());
      if (!m) throw bad(field, `${field}: keys are resources:<class>, trait:<trait> or accel:<name>`);
      const [, kind, rest] = m;
      const name = rest!.trim();
      const value = String(rawValue).trim();
      if (kind === 'accel') {
        accel[name] = value;
        continue;
      }
      const canonical = name.toUpperCase();
      if (!/^[A-Z0-9_]+$/.test(canonical)) throw bad(field, `${field}: ${name} is not a Placement name ([A-Z0-9_])`);
      if (kind === 'resources') {
        if (!/^\d+$/.test(value) || Number(value) < 1) throw bad(field, `${field}: the amount "${value}" is not a positive integer`);
        resources.set(canonical, (resources.get(canonical) ?? 0) + Number(value));
      } else if (value === 'required' || value === 'forbidden') {
        (value === 'required' ? required : forbidden).add(canonical);
      } else {
        throw bad(field, `${field}: "${value}" is neither required nor forbidden`);
      }
    }
    for (const t of required) if (forbidden.has(t)) throw bad(`groups[${index}].trait:${t}`, `groups[${index}]: trait ${t} is both required and forbidden`);
    if (resources.size === 0) throw bad(`groups[${index}]`, `groups[${index}] asks for no resources: a group needs a resources:<class> key`);
    return { index, resources, required, forbidden, accel };
  });
}
