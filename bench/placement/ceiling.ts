import pLimit from 'p-limit';
import type { DesiredProvider } from '../../openstack/placement/index.js';

/** One provider the ceiling writes: what our sync would write for an accelerator, and where. */
export interface CeilingItem {
  rootName: string;
  rootUuid: string;
  provider: DesiredProvider;
}

export interface Tally {
  requests: number;
  conflicts: number;
  serverErrors: number;
}

/**
 * The ceiling: a plain client (fetch, no retries, no reads) sending Placement the least a
 * converge needs — custom classes and traits once, then per host its root provider, and per
 * deployable POST provider, PUT inventories at generation 0, PUT traits at generation 1 — with
 * `concurrency` requests in flight, hosts in order. No real client can need fewer requests, so
 * its time is what Placement itself allows at that concurrency.
 */
export async function ceiling(url: string, items: CeilingItem[], concurrency: number, onHostDone: (root: string) => void): Promise<Tally> {
  const tally: Tally = { requests: 0, conflicts: 0, serverErrors: 0 };
  const call = async (method: string, path: string, microversion: string, body?: unknown): Promise<unknown> => {
    tally.requests++;
    const res = await fetch(url + path, {
      method,
      headers: {
        'X-Auth-Token': 'admin',
        'OpenStack-API-Version': `placement ${microversion}`,
        Accept: 'application/json',
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status === 409) tally.conflicts++;
    if (res.status >= 500) tally.serverErrors++;
    if (res.status >= 300) throw new Error(`ceiling ${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
    return text ? JSON.parse(text) : null;
  };
  const limit = pLimit(concurrency);
  const classes = new Set(items.map((i) => i.provider.resourceClass).filter((c) => c.startsWith('CUSTOM_')));
  const traits = new Set(items.flatMap((i) => i.provider.traits).filter((t) => t.startsWith('CUSTOM_')));
  await Promise.all([
    ...[...classes].map((c) => limit(() => call('PUT', `/resource_classes/${c}`, '1.7'))),
    ...[...traits].map((t) => limit(() => call('PUT', `/traits/${t}`, '1.6'))),
  ]);
  const roots = new Map<string, Promise<unknown>>();
  const left = new Map<string, number>();
  for (const i of items) left.set(i.rootUuid, (left.get(i.rootUuid) ?? 0) + 1);
  const root = (i: CeilingItem): Promise<unknown> => {
    let p = roots.get(i.rootUuid);
    if (!p) roots.set(i.rootUuid, (p = call('POST', '/resource_providers', '1.20', { uuid: i.rootUuid, name: i.rootName })));
    return p;
  };
  await Promise.all(
    items.map((i) =>
      limit(async () => {
        await root(i);
        const d = i.provider;
        await call('POST', '/resource_providers', '1.20', { uuid: d.rpUuid, name: d.name, parent_provider_uuid: i.rootUuid });
        const reserved = d.usable ? 0 : d.total;
        await call('PUT', `/resource_providers/${d.rpUuid}/inventories`, '1.26', {
          resource_provider_generation: 0,
          inventories: { [d.resourceClass]: { total: d.total, reserved, min_unit: 1, max_unit: d.total, step_size: 1, allocation_ratio: 1 } },
        });
        await call('PUT', `/resource_providers/${d.rpUuid}/traits`, '1.6', { resource_provider_generation: 1, traits: d.traits });
        const n = left.get(i.rootUuid)! - 1;
        left.set(i.rootUuid, n);
        if (n === 0) onHostDone(i.rootUuid);
      }),
    ),
  );
  return tally;
}
