/** Lost or extra providers: Placement's whole listing against the uuids expected (roots and deployables). */
export async function countMismatch(url: string, expected: Set<string>): Promise<{ lost: number; extra: number }> {
  const res = await fetch(`${url}/resource_providers`, { headers: { 'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.14' } });
  const { resource_providers: all } = (await res.json()) as { resource_providers: { uuid: string }[] };
  const seen = new Set(all.map((p) => p.uuid));
  // A duplicate would be a second provider for one name; Placement refuses those, so extra = not expected.
  return { lost: [...expected].filter((u) => !seen.has(u)).length, extra: [...seen].filter((u) => !expected.has(u)).length };
}
