import type { GroupPolicy, RequestGroup } from './groups.js';

/** One resource provider a group may land on: an accelerator's deployable, as its view shows it. */
export interface Candidate {
  id: string;
  /** Its inventories: resource class → what is free now (capacity less what is allocated). */
  free: ReadonlyMap<string, number>;
  traits: readonly string[];
}

/** Why one candidate does not satisfy one group, in words an operator can act on. */
export function whyNot(group: RequestGroup, c: Candidate): string | null {
  for (const [rc, n] of group.resources) {
    const free = c.free.get(rc);
    if (free === undefined) return `has no ${rc} inventory`;
    if (free < n) return `has ${free} ${rc} free, ${n} asked`;
  }
  const have = new Set(c.traits);
  for (const t of group.required) if (!have.has(t)) return `lacks required trait ${t}`;
  for (const t of group.forbidden) if (have.has(t)) return `has forbidden trait ${t}`;
  return null;
}

export interface Match {
  /** The candidate each group landed on, by group index. */
  assignment: string[];
}

export interface NoMatch {
  /** For each group, why no candidate (or no combination with the others) can take it. */
  reasons: string[];
}

/**
 * Placement's allocation-candidate semantics for a profile's groups over a set of providers:
 * every group lands whole on one provider that has every resource it asks for (each with enough
 * free), every required trait and no forbidden one; `isolate` puts no two groups on one
 * provider, `none` lets them share one while its free amounts last. The first assignment in
 * candidate order is returned (callers order candidates by preference).
 */
export function matchGroups(groups: readonly RequestGroup[], candidates: readonly Candidate[], policy: GroupPolicy = 'none'): Match | NoMatch {
  const fitting = groups.map((g) => candidates.filter((c) => whyNot(g, c) === null));
  const reasons: string[] = [];
  groups.forEach((g, i) => {
    if (fitting[i]!.length > 0) return;
    const seen = candidates.slice(0, 3).map((c) => `${c.id} ${whyNot(g, c)}`);
    reasons.push(
      `group ${g.index} (${describe(g)}): ${candidates.length === 0 ? 'no candidates' : seen.join('; ')}${candidates.length > 3 ? `; … ${candidates.length - 3} more` : ''}`,
    );
  });
  if (reasons.length > 0) return { reasons };
  const used = new Map<string, Map<string, number>>();
  const assignment: string[] = [];
  const place = (i: number): boolean => {
    if (i === groups.length) return true;
    const g = groups[i]!;
    for (const c of fitting[i]!) {
      const taken = used.get(c.id);
      if (taken && policy === 'isolate') continue;
      if (taken && [...g.resources].some(([rc, n]) => (taken.get(rc) ?? 0) + n > (c.free.get(rc) ?? 0))) continue;
      const next = new Map(taken ?? []);
      for (const [rc, n] of g.resources) next.set(rc, (next.get(rc) ?? 0) + n);
      used.set(c.id, next);
      assignment.push(c.id);
      if (place(i + 1)) return true;
      assignment.pop();
      if (taken) used.set(c.id, taken);
      else used.delete(c.id);
    }
    return false;
  };
  if (place(0)) return { assignment };
  return { reasons: [`the groups fit one by one but not together (group_policy=${policy}): not enough providers or free capacity for all of them at once`] };
}

export function describe(g: RequestGroup): string {
  return [...[...g.resources].map(([rc, n]) => `${rc}=${n}`), ...[...g.required].map((t) => `+${t}`), ...[...g.forbidden].map((t) => `!${t}`)].join(', ');
}
