import type { DesiredProvider } from '../../openstack/placement/index.js';

const headers = (microversion: string): Record<string, string> => ({ 'X-Auth-Token': 'admin', 'OpenStack-API-Version': `placement ${microversion}` });

/** Lost or extra providers: Placement's whole listing against the uuids expected (roots and deployables). */
export async function countMismatch(url: string, expected: Set<string>): Promise<{ lost: number; extra: number }> {
  const res = await fetch(`${url}/resource_providers`, { headers: headers('1.14') });
  const { resource_providers: all } = (await res.json()) as { resource_providers: { uuid: string }[] };
  const seen = new Set(all.map((p) => p.uuid));
  // A duplicate would be a second provider for one name; Placement refuses those, so extra = not expected.
  return { lost: [...expected].filter((u) => !seen.has(u)).length, extra: [...seen].filter((u) => !expected.has(u)).length };
}

/**
 * Deployable providers whose inventory (class, total, reserved) or traits differ from what the
 * sync should have written: a listing shows a provider exists, not that a faulted write was
 * redone. Read one after the other, straight from Placement (no proxy, no fault).
 */
export async function countDiffering(url: string, desired: DesiredProvider[]): Promise<number> {
  let differing = 0;
  for (const d of desired) {
    const [inv, tr] = await Promise.all([
      fetch(`${url}/resource_providers/${d.rpUuid}/inventories`, { headers: headers('1.26') }),
      fetch(`${url}/resource_providers/${d.rpUuid}/traits`, { headers: headers('1.6') }),
    ]);
    if (inv.status !== 200 || tr.status !== 200) {
      await Promise.all([inv.text(), tr.text()]); // read to the end: undici keeps the connection otherwise
      differing++;
      continue;
    }
    const { inventories } = (await inv.json()) as { inventories: Record<string, { total: number; reserved: number }> };
    const { traits } = (await tr.json()) as { traits: string[] };
    const r = inventories[d.resourceClass];
    const sameInventory = Object.keys(inventories).length === 1 && r?.total === d.total && r.reserved === (d.usable ? 0 : d.total);
    if (!sameInventory || [...traits].sort().join() !== [...d.traits].sort().join()) differing++;
  }
  return differing;
}
