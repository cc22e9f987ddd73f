import type { DeviceT } from '../model/index.js';
import { describe, matchGroups, readGroups, type Candidate } from '../placement-query/index.js';

/** A device profile as recorded: its name and request groups. */
export interface RecordedProfile {
  name: string;
  groups: Record<string, string>[];
}

/** What an operator can do about a trait spelling another Cyborg release used. */
const HINTS: { pattern: RegExp; hint: string }[] = [
  {
    pattern: /^CUSTOM_GPU_(NVIDIA|PRODUCT_ID_)/,
    hint: "Cyborg ≤ 10.0.0's NVIDIA spelling: set [gpu_devices] legacy_traits = true, or rewrite the profile with CUSTOM_NVIDIA_<PID>",
  },
  {
    pattern: /^CUSTOM_PCI(_|$)/,
    hint: "Cyborg 2025.1's pci_driver spelling: add pci_driver to [agent] enabled_drivers for these devices, or rewrite the profile for the driver that reports them",
  },
];

/**
 * The profiles no recorded provider can satisfy, each with why (Placement's semantics, the one
 * matcher of placement-query/): after a switch from another Cyborg release these are the
 * flavors whose servers would no longer find a host. Amounts are checked against each
 * provider's size, not what is free now: a full cloud is no reason to warn.
 */
export function unmatchedProfiles(profiles: readonly RecordedProfile[], inventories: ReadonlyMap<string, readonly DeviceT[]>): string[] {
  const candidates: Candidate[] = [];
  for (const devices of inventories.values()) {
    for (const dev of devices) {
      for (const dep of dev.deployables) {
        const rc = dep.attributes.find((a) => a.key === 'rc')?.value;
        if (rc)
          candidates.push({
            id: dep.name,
            free: new Map([[rc, Math.max(dep.numAccelerators, dep.attachHandles.length)]]),
            traits: dep.attributes.filter((a) => a.key.startsWith('trait')).map((a) => a.value),
          });
      }
    }
  }
  const out: string[] = [];
  for (const p of profiles) {
    let groups;
    try {
      groups = readGroups(p.groups);
    } catch (err) {
      out.push(`${p.name}: unreadable (${(err as Error).message})`);
      continue;
    }
    const found = matchGroups(groups, candidates, 'none');
    if (!('reasons' in found)) continue;
    const traits = groups.flatMap((g) => [...g.required]);
    const hints = [...new Set(HINTS.filter((h) => traits.some((t) => h.pattern.test(t))).map((h) => h.hint))];
    out.push(`${p.name} (${groups.map(describe).join(' | ')}) matches no provider${hints.length ? `: ${hints.join('; ')}` : ''}`);
  }
  return out;
}
