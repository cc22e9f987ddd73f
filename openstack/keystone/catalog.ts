import type { CatalogEntry } from './types.js';

export interface EndpointFilter {
  serviceType: string;
  /** keystoneauth's `valid_interfaces`, in order of preference. */
  interfaces?: readonly string[];
  region?: string;
}

/**
 * The endpoint URL for a service type, as keystoneauth picks it: the first of the valid
 * interfaces that has one (in the region, when a region is given). `internal` / `internalURL`
 * spellings are both accepted. Undefined when the catalog has none.
 */
export function findEndpoint(catalog: readonly CatalogEntry[], f: EndpointFilter): string | undefined {
  const interfaces = (f.interfaces?.length ? f.interfaces : ['internal', 'public']).map((i) => i.replace(/URL$/, '').toLowerCase());
  const services = catalog.filter((s) => s.type === f.serviceType);
  for (const iface of interfaces) {
    for (const s of services) {
      const e = s.endpoints.find((ep) => ep.interface === iface && (!f.region || (ep.region_id ?? ep.region) === f.region));
      if (e) return e.url.replace(/\/+$/, '');
    }
  }
  return undefined;
}
