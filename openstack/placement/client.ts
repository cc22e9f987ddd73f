import { setTimeout as delay } from 'node:timers/promises';
import type { Config } from '../../config/index.js';
import { authMethod, KeystoneSession } from '../keystone/index.js';
import { PlacementError, type PlacementCode } from './errors.js';
import { globalRequestIdHeader } from '../request-id.js';
import { CyborgError } from '../../errors/index.js';

/** The microversion each feature needs (calls send at least MIN_MICROVERSION, see below). */
export const Microversions = {
  base: '1.0',
  traits: '1.6',
  resourceClassPut: '1.7',
  inTree: '1.14',
  /** reserved == total (Cyborg's "device disabled") is only valid from 1.26. */
  inventories: '1.26',
  requiredFilter: '1.18',
  createReturnsBody: '1.20',
  reparent: '1.37',
  allocations: '1.39',
} as const;

/**
 * Every call asks for at least this: error bodies carry Placement's `code` only from 1.23, and
 * reserved == total needs 1.26 (Rocky). So this is also the least the server must offer.
 */
export const MIN_MICROVERSION = Microversions.inventories;

/** Whether microversion `v` ("1.26") is at least `min`. */
export function microversionAtLeast(v: string, min: string): boolean {
  const [a, b] = v.split('.').map(Number);
  const [x, y] = min.split('.').map(Number);
  return a! > x! || (a === x && b! >= y!);
}

function atLeastFloor(v: string): string {
  return microversionAtLeast(v, MIN_MICROVERSION) ? v : MIN_MICROVERSION;
}

export interface Provider {
  uuid: string;
  name: string;
  generation: number;
  parent_provider_uuid: string | null;
  root_provider_uuid: string;
}

/** One resource class's inventory on a provider, with Placement's field names. */
export interface InventoryRecord {
  total: number;
  reserved: number;
  min_unit: number;
  max_unit: number;
  step_size: number;
  allocation_ratio: number;
}

export type Inventories = Record<string, InventoryRecord>;

export interface PlacementClientOptions {
  /** Placement's endpoint; with a session, optional (then found in Keystone's catalog). */
  url?: string;
  /** Fixed-token mode (noauth Placement, tests): sent as X-Auth-Token. */
  token?: string;
  /** Keystone mode: the service user's session authenticates, finds the endpoint and re-authenticates on 401. */
  session?: KeystoneSession;
  timeoutMs: number;
  /** Told about every request (for metrics): method, HTTP status (0 = no answer), duration. */
  onRequest?: (method: string, status: number, ms: number) => void;
}

interface CallOptions {
  microversion: string;
  body?: unknown;
  /** Statuses that are not errors; others throw PlacementError. */
  ok?: number[];
}

/**
 * A small client for the OpenStack Placement API: resource providers, inventories, traits,
 * resource classes, usages. Every call has a timeout; every failure is a PlacementError with
 * Placement's own error code. Counts its requests (`requests`) for the benchmark.
 */
export class PlacementClient {
  requests = 0;
  private readonly base: string;

  constructor(private readonly opts: PlacementClientOptions) {
    if (!opts.url && !opts.session) throw new CyborgError('config.invalid', 'PlacementClient needs a url or a Keystone session');
    this.base = (opts.url ?? '').replace(/\/+$/, '');
  }

  get url(): string {
    return this.base || 'from the Keystone catalog';
  }

  /** The highest microversion the server offers (`GET /` needs no token). */
  async maxMicroversion(): Promise<string> {
    const doc = await this.call<{ versions: { max_version: string }[] }>('GET', '/', { microversion: Microversions.base });
    return doc.versions[0]?.max_version ?? '1.0';
  }

  providersByName(name: string): Promise<Provider[]> {
    return this.list(`/resource_providers?name=${encodeURIComponent(name)}`, Microversions.inTree);
  }

  /** Every provider in the tree rooted at `rootUuid` (the root included). */
  providersInTree(rootUuid: string, requiredTraits: string[] = []): Promise<Provider[]> {
    const q = requiredTraits.length > 0 ? `&required=${encodeURIComponent(requiredTraits.join(','))}` : '';
    return this.list(`/resource_providers?in_tree=${rootUuid}${q}`, q ? Microversions.requiredFilter : Microversions.inTree);
  }

  /** The provider, or null when Placement has none with this uuid. */
  async getProvider(uuid: string): Promise<Provider | null> {
    return this.call<Provider>('GET', `/resource_providers/${uuid}`, { microversion: Microversions.inTree, ok: [404] });
  }

  createProvider(p: { uuid: string; name: string; parentUuid?: string | null }): Promise<Provider> {
    const body: Record<string, unknown> = { uuid: p.uuid, name: p.name };
    if (p.parentUuid) body.parent_provider_uuid = p.parentUuid;
    return this.call<Provider>('POST', '/resource_providers', { microversion: Microversions.createReturnsBody, body });
  }

  /** Renames or re-parents a provider (re-parenting needs 1.37). */
  updateProvider(uuid: string, p: { name: string; parentUuid: string | null }): Promise<Provider> {
    return this.call<Provider>('PUT', `/resource_providers/${uuid}`, {
      microversion: Microversions.reparent,
      body: { name: p.name, parent_provider_uuid: p.parentUuid },
    });
  }

  /** Deletes a provider; true if it existed. */
  async deleteProvider(uuid: string): Promise<boolean> {
    const r = await this.send('DELETE', `/resource_providers/${uuid}`, { microversion: Microversions.base, ok: [404] });
    return r.status !== 404;
  }

  async getInventories(uuid: string): Promise<{ generation: number; inventories: Inventories }> {
    const r = await this.call<{ resource_provider_generation: number; inventories: Inventories }>('GET', `/resource_providers/${uuid}/inventories`, {
      microversion: Microversions.base,
    });
    return { generation: r.resource_provider_generation, inventories: r.inventories };
  }

  /** Replaces all inventories; returns the provider's new generation and what Placement now holds. */
  async putInventories(
    uuid: string,
    generation: number,
    inventories: Record<string, Partial<InventoryRecord> & { total: number }>,
  ): Promise<{ generation: number; inventories: Inventories }> {
    const r = await this.call<{ resource_provider_generation: number; inventories: Inventories }>('PUT', `/resource_providers/${uuid}/inventories`, {
      microversion: Microversions.inventories,
      body: { resource_provider_generation: generation, inventories },
    });
    return { generation: r.resource_provider_generation, inventories: r.inventories };
  }

  async getTraits(uuid: string): Promise<{ generation: number; traits: string[] }> {
    const r = await this.call<{ resource_provider_generation: number; traits: string[] }>('GET', `/resource_providers/${uuid}/traits`, {
      microversion: Microversions.traits,
    });
    return { generation: r.resource_provider_generation, traits: r.traits };
  }

  /** Replaces all traits; returns the provider's new generation. */
  async putTraits(uuid: string, generation: number, traits: string[]): Promise<number> {
    const r = await this.call<{ resource_provider_generation: number }>('PUT', `/resource_providers/${uuid}/traits`, {
      microversion: Microversions.traits,
      body: { resource_provider_generation: generation, traits },
    });
    return r.resource_provider_generation;
  }

  /** Resource class → amount allocated on this provider. */
  async getUsages(uuid: string): Promise<Record<string, number>> {
    const r = await this.call<{ usages: Record<string, number> }>('GET', `/resource_providers/${uuid}/usages`, { microversion: Microversions.base });
    return r.usages;
  }

  /** Creates a custom trait if missing (idempotent). */
  async ensureTrait(name: string): Promise<void> {
    await this.call('PUT', `/traits/${encodeURIComponent(name)}`, { microversion: Microversions.traits });
  }

  /** Deletes a custom trait definition; false when it is still used somewhere or already gone. */
  async deleteTrait(name: string): Promise<boolean> {
    const r = await this.send('DELETE', `/traits/${encodeURIComponent(name)}`, { microversion: Microversions.traits, ok: [404, 409] });
    return r.status < 300;
  }

  /** Creates a custom resource class if missing (idempotent, 1.7). */
  async ensureResourceClass(name: string): Promise<void> {
    await this.call('PUT', `/resource_classes/${encodeURIComponent(name)}`, { microversion: Microversions.resourceClassPut });
  }

  /** Writes a consumer's allocations (1.39 dict format): what Nova's scheduler does; tests use it. */
  async putAllocations(
    consumer: string,
    body: {
      allocations: Record<string, { resources: Record<string, number> }>;
      project_id: string;
      user_id: string;
      consumer_generation: number | null;
      consumer_type?: string;
    },
  ): Promise<void> {
    await this.call('PUT', `/allocations/${consumer}`, { microversion: Microversions.allocations, body: { consumer_type: 'INSTANCE', ...body } });
  }

  /** Consumer → resource class → amount of one provider's allocations; a provider Placement does not know holds none. */
  async providerAllocations(rpUuid: string): Promise<Record<string, Record<string, number>>> {
    const r = await this.call<{ allocations: Record<string, { resources: Record<string, number> }> } | null>(
      'GET',
      `/resource_providers/${rpUuid}/allocations`,
      {
        microversion: Microversions.base,
        ok: [404],
      },
    );
    return Object.fromEntries(Object.entries(r?.allocations ?? {}).map(([consumer, a]) => [consumer, a.resources]));
  }

  async deleteAllocations(consumer: string): Promise<void> {
    await this.call('DELETE', `/allocations/${consumer}`, { microversion: Microversions.allocations, ok: [404] });
  }

  /**
   * Takes provider `rpUuid` out of `consumer`'s allocations and leaves the rest of them (an
   * instance's VCPU and memory on its compute node) as they are: what an operator's release of an
   * instance from a dead card frees. Written with the consumer's generation, re-read and retried
   * when something else wrote it meanwhile. False when the consumer holds nothing there.
   */
  async releaseProvider(consumer: string, rpUuid: string): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      const cur = await this.call<{
        allocations: Record<string, { resources: Record<string, number> }>;
        consumer_generation?: number;
        project_id?: string;
        user_id?: string;
        consumer_type?: string;
      }>('GET', `/allocations/${consumer}`, { microversion: Microversions.allocations });
      if (!cur.allocations[rpUuid]) return false;
      const rest = Object.fromEntries(
        Object.entries(cur.allocations)
          .filter(([rp]) => rp !== rpUuid)
          .map(([rp, a]) => [rp, { resources: a.resources }]),
      );
      try {
        if (Object.keys(rest).length === 0) await this.deleteAllocations(consumer);
        else {
          await this.call('PUT', `/allocations/${consumer}`, {
            microversion: Microversions.allocations,
            body: {
              allocations: rest,
              consumer_generation: cur.consumer_generation ?? null,
              project_id: cur.project_id,
              user_id: cur.user_id,
              consumer_type: cur.consumer_type ?? 'INSTANCE',
            },
          });
        }
        return true;
      } catch (err) {
        if (!(err instanceof PlacementError) || err.httpStatus !== 409 || attempt >= 4) throw err;
      }
    }
  }

  private async list(path: string, microversion: string): Promise<Provider[]> {
    const r = await this.call<{ resource_providers: Provider[] }>('GET', path, { microversion });
    return r.resource_providers;
  }

  /** One HTTP call. Resolves with the JSON body (null for an empty body or an `ok` error status). */
  async call<T>(method: string, path: string, o: CallOptions): Promise<T> {
    return (await this.send(method, path, o)).body as T;
  }

  /**
   * A 5xx is retried twice after a short pause: Placement answers 500 for a transaction that
   * lost a database lock (sqlite "database is locked", MySQL deadlocks) and nothing was
   * written. No answer at all is not retried here — the sync loop backs off instead.
   */
  private async send(method: string, path: string, o: CallOptions): Promise<{ status: number; body: unknown }> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(method, path, o);
      } catch (err) {
        if (attempt >= 2 || !(err instanceof PlacementError) || err.httpStatus < 500) throw err;
        await delay(50 * 4 ** attempt);
      }
    }
  }

  private async once(method: string, path: string, o: CallOptions): Promise<{ status: number; body: unknown }> {
    this.requests++;
    const started = performance.now();
    const headers: Record<string, string> = {
      'OpenStack-API-Version': `placement ${path === '/' ? o.microversion : atLeastFloor(o.microversion)}`,
      Accept: 'application/json',
      // The request this call is made for, as Placement logs it beside its own id.
      ...globalRequestIdHeader(),
    };
    if (o.body !== undefined) headers['Content-Type'] = 'application/json';
    let res: { status: number; text: string };
    try {
      res = await this.exchange(method, path, headers, o.body === undefined ? undefined : JSON.stringify(o.body));
    } catch (err) {
      this.opts.onRequest?.(method, 0, performance.now() - started);
      const why = err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${this.opts.timeoutMs} ms` : causeText(err);
      throw new PlacementError(`Placement ${method} ${path}: ${why}`, { method, path, httpStatus: 0, placementCode: null }, { cause: err });
    }
    const text = res.text;
    this.opts.onRequest?.(method, res.status, performance.now() - started);
    if (res.status >= 200 && res.status < 300) return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
    if (o.ok?.includes(res.status)) return { status: res.status, body: null };
    const e = firstError(text);
    throw new PlacementError(`Placement ${method} ${path}: ${res.status} ${e.detail}`, {
      method,
      path,
      httpStatus: res.status,
      placementCode: e.code,
      ...(e.requestId ? { requestId: e.requestId } : {}),
    });
  }

  /**
   * One HTTP exchange: through the Keystone session (its token, the catalog's endpoint, one
   * re-authentication on 401), or with the fixed token. No answer at all throws.
   */
  private async exchange(method: string, path: string, headers: Record<string, string>, body: string | undefined): Promise<{ status: number; text: string }> {
    if (this.opts.session) {
      const session = this.opts.session;
      return session.request(path, { method, headers, body, timeoutMs: this.opts.timeoutMs });
    }
    const res = await fetch(this.base + path, {
      method,
      headers: { ...headers, 'X-Auth-Token': this.opts.token ?? 'admin' },
      body,
      signal: AbortSignal.timeout(this.opts.timeoutMs),
    });
    return { status: res.status, text: await res.text().catch(() => '') };
  }
}

/**
 * The Placement client the configuration asks for: with `[placement] auth_url`, a Keystone
 * session as the configured user (the endpoint from the catalog unless `placementUrl` overrides
 * it); else the fixed token against `placementUrl`; undefined when neither is configured.
 */
export function placementClientFromConfig(
  config: Pick<Config, 'placementUrl' | 'placementToken' | 'placement'>,
  onRequest?: PlacementClientOptions['onRequest'],
): PlacementClient | undefined {
  const p = config.placement;
  const common = { timeoutMs: p.timeoutMs, ...(onRequest ? { onRequest } : {}) };
  if (p.authUrl) {
    const session = new KeystoneSession({
      authUrl: p.authUrl,
      auth: authMethod('placement', p),
      serviceType: 'placement',
      interfaces: p.validInterfaces,
      ...(p.regionName ? { region: p.regionName } : {}),
      ...(config.placementUrl ? { endpointOverride: config.placementUrl } : {}),
      timeoutMs: p.timeoutMs,
    });
    return new PlacementClient({ ...common, session, ...(config.placementUrl ? { url: config.placementUrl } : {}) });
  }
  if (!config.placementUrl) return undefined;
  return new PlacementClient({ ...common, url: config.placementUrl, token: config.placementToken });
}

function causeText(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

/** Placement's error body: `{"errors": [{status, title, detail, code, request_id}]}`. */
function firstError(text: string): { code: PlacementCode | null; detail: string; requestId?: string } {
  try {
    const body = JSON.parse(text) as { errors?: { code?: string; detail?: string; title?: string; request_id?: string }[] };
    const e = body.errors?.[0];
    if (e) {
      const detail = (e.detail ?? e.title ?? '').replace(/\s+/g, ' ').trim();
      return { code: e.code ?? null, detail, ...(e.request_id ? { requestId: e.request_id } : {}) };
    }
  } catch {
    // not JSON: a proxy's error page, say
  }
  return { code: null, detail: text.slice(0, 200) };
}
