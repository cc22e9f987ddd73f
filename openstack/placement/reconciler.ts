import { setTimeout as delay } from 'node:timers/promises';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import type { Inventories, PlacementClient, Provider } from './client.js';
import { OWNER_TRAIT, type Desired, type DesiredProvider } from './desired.js';
import { isPlacementError, PlacementCodes, PlacementError } from './errors.js';
import { functionTraitsToDelete, needsUsages, planHold, planInventories, planTraits, type SyncFlag } from './plan.js';
import { globalRequestId } from '../request-id.js';
import { RootProviderMissingError, type RootProviders } from './roots.js';
import { HOLD_CONSUMER_TYPE, HOLD_USER, holdersKey, holdSlot, planHolds, type HoldPlan } from './holds.js';

export type SyncState = 'in_sync' | 'pending' | 'error';

/** How one accelerator's provider came out of a pass. */
export interface ProviderOutcome {
  id: string;
  rpUuid: string;
  status: SyncState;
  reason: string | null;
  flags: SyncFlag[];
  /** The provider's generation as last seen; null when it does not exist. */
  generation: number | null;
  /** Worth another pass soon: Placement down, root provider missing, lost too many races. */
  retry: boolean;
  /** Placement held something else than we last left there, and was put right. */
  repaired: boolean;
}

/** A provider under a compute node with OWNER_CYBORG that no accelerator claims. */
export interface StaleOutcome {
  host: string;
  rpUuid: string;
  name: string;
  deleted: boolean;
  flags: SyncFlag[];
}

/** What we last saw or wrote of a provider: lets a pass skip providers whose generation did not move. */
interface Known {
  generation: number;
  inventories: Inventories;
  traits: string[];
  /** Who held the device when its holds were last put right (holds.ts); unset: not looked at yet. */
  holders?: string;
}

export interface ReconcilerOptions {
  client: PlacementClient;
  roots: RootProviders;
  log: Logger;
  concurrency: number;
  /** Tries per provider when its generation keeps moving under us (409 concurrent_update). */
  maxAttempts?: number;
}

/**
 * Makes Placement hold what the accelerators ask for, host by host: the provider tree under
 * the compute node, inventories, traits, custom classes and traits. Uses provider generations
 * for optimistic concurrency (409 → re-read, retry) and never strands an allocation. Keeps what
 * it last saw of each provider, so a periodic pass costs one listing per host when nothing moved.
 */
export class Reconciler {
  private known = new Map<string, Known>();
  private ensured = new Map<string, Promise<void>>();
  private limit: LimitFunction;
  /** Set by the first "Placement is not answering" of a pass: the rest of the pass stops early. */
  private down: PlacementError | null = null;

  constructor(private readonly opts: ReconcilerOptions) {
    this.limit = pLimit(opts.concurrency);
  }

  beginPass(): void {
    this.down = null;
  }

  /** The error that made this pass give up on Placement, if one did. */
  get unavailable(): PlacementError | null {
    return this.down;
  }

  /**
   * Syncs the providers of one host's accelerators. With `full`, lists the host's tree to catch
   * out-of-band changes and deletes Cyborg-owned providers that no accelerator in `claimed` has.
   */
  async syncHost(host: string, items: Desired[], o: { full: boolean; claimed: Set<string> }): Promise<{ outcomes: ProviderOutcome[]; stale: StaleOutcome[] }> {
    let root: string;
    let listing: Map<string, Provider> | null = null;
    let created: Provider | undefined;
    try {
      this.throwIfDown();
      root = await this.opts.roots.resolve(host);
      created = this.opts.roots.takeCreated(host);
      if (created) listing = new Map([[created.uuid, created]]);
      else if (o.full || items.some((i) => !this.known.has(i.rpUuid))) {
        const tree = await this.opts.client.providersInTree(root);
        if (tree.length === 0) {
          this.opts.roots.forget(host); // the compute node's provider went away: look it up again
          throw new RootProviderMissingError(host, this.opts.roots.nameOf(host));
        }
        listing = new Map(tree.map((p) => [p.uuid, p]));
      }
    } catch (err) {
      return { outcomes: items.map((i) => this.failed(i.id, i.rpUuid, err)), stale: [] };
    }
    const outcomes = await Promise.all(items.map((i) => this.limit(() => this.syncOne(i, root, listing))));
    // Nothing stale can hang under a root created a moment ago.
    const stale = o.full && !this.down && !created ? await this.sweep(host, root, o.claimed) : [];
    return { outcomes, stale };
  }

  private async syncOne(item: Desired, root: string, listing: Map<string, Provider> | null): Promise<ProviderOutcome> {
    if (!item.ok) return { ...base(item.id, item.rpUuid), status: 'error', reason: item.reason };
    const d = item.desired;
    try {
      this.throwIfDown();
      return d.present ? await this.converge(d, root, listing) : await this.remove(d.id, d.rpUuid, listing);
    } catch (err) {
      return this.failed(d.id, d.rpUuid, err);
    }
  }

  /** Create-or-update with generations: a stale generation means re-read and plan again. */
  private async converge(d: DesiredProvider, root: string, listing: Map<string, Provider> | null): Promise<ProviderOutcome> {
    let state = this.startingPoint(d.rpUuid, listing);
    // Someone else changed (or deleted) a provider we had left in order.
    const known = this.known.get(d.rpUuid);
    const drifted = known !== undefined && listing !== null && listing.get(d.rpUuid)?.generation !== known.generation;
    let wrote = false;
    for (let attempt = 1; attempt <= (this.opts.maxAttempts ?? 5); attempt++) {
      try {
        if (state === undefined) state = await this.read(d.rpUuid);
        let created = false;
        if (state === null) {
          const p = await this.createOrAdopt(d, root);
          created = p !== null;
          state = p ? { generation: p.generation, inventories: {}, traits: [] } : await this.read(d.rpUuid);
          if (!state) continue;
          wrote = true;
        }
        const flags = await this.apply(d, state, created, () => {
          wrote = true;
        });
        return { ...base(d.id, d.rpUuid), status: 'in_sync', flags, generation: state.generation, repaired: drifted && wrote };
      } catch (err) {
        if (!isPlacementError(err) || !(err.concurrentUpdate || err.notFound || err.placementCode === PlacementCodes.inventoryInUse)) throw err;
        this.opts.log.debug({ rpUuid: d.rpUuid, acceleratorId: d.id, attempt, code: err.placementCode }, 'provider changed under us; re-reading');
        state = undefined;
        this.known.delete(d.rpUuid);
        // Whoever moved it may still be writing: a jittered, growing pause, not a tight loop.
        await delay(retryPauseMs(attempt));
      }
    }
    return { ...base(d.id, d.rpUuid), status: 'pending', reason: 'the provider kept changing under us (409 concurrent_update); will retry', retry: true };
  }

  /**
   * Creates the provider under the compute node's. If it already exists elsewhere (the compute
   * node's provider was re-created, say), moves it under the current one instead (1.37) and
   * returns null: its contents are read next.
   */
  private async createOrAdopt(d: DesiredProvider, root: string): Promise<Provider | null> {
    try {
      return await this.opts.client.createProvider({ uuid: d.rpUuid, name: d.name, parentUuid: root });
    } catch (err) {
      if (isPlacementError(err) && err.httpStatus === 400 && /parent provider/i.test(err.message)) {
        // The compute node's provider is gone (Placement's database was reset, say): look again.
        this.opts.roots.forget(d.host);
        throw new RootProviderMissingError(d.host, this.opts.roots.nameOf(d.host));
      }
      if (!isPlacementError(err) || err.httpStatus !== 409) throw err;
      const existing = await this.opts.client.getProvider(d.rpUuid);
      if (!existing) throw err; // the name is taken by another uuid: say so
      this.opts.log.warn(
        { rpUuid: d.rpUuid, from: existing.parent_provider_uuid, to: root },
        'provider found under another parent: moving it under the compute node',
      );
      await this.opts.client.updateProvider(d.rpUuid, { name: d.name, parentUuid: root });
      return null;
    }
  }

  /**
   * Writes the holds, inventory and traits that differ, moving `state` along with each write.
   * Holds no longer needed go first and new ones last, so the inventory written between them
   * always has room for what is allocated (reserved = everything else while out of service).
   */
  private async apply(d: DesiredProvider, state: Known, created: boolean, onWrite: () => void): Promise<SyncFlag[]> {
    const { client } = this.opts;
    await this.ensure('rc', d.resourceClass);
    const key = holdersKey(d);
    let holds: HoldPlan | null = null;
    let usages: Record<string, number> = {};
    if (state.holders !== key || needsUsages(d, state.inventories)) {
      // A provider created a moment ago holds no allocation: no need to ask.
      holds = planHolds(d, created ? {} : await client.providerAllocations(d.rpUuid));
      usages = { ...holds.usages, [d.resourceClass]: holds.usedAfter };
      if (holds.remove.length > 0) {
        for (const consumer of holds.remove) await client.deleteAllocations(consumer);
        state.generation = (await client.getInventories(d.rpUuid)).generation;
        onWrite();
      }
    }
    const inv = planInventories(d, state.inventories, usages);
    if (inv.write) {
      const r = await client.putInventories(d.rpUuid, state.generation, inv.write);
      Object.assign(state, r);
      onWrite();
    }
    if (holds && holds.add.length > 0) {
      for (const h of holds.add) {
        await client.putAllocations(h.consumer, {
          allocations: { [d.rpUuid]: { resources: { [d.resourceClass]: 1 } } },
          project_id: h.projectId,
          user_id: HOLD_USER,
          consumer_generation: null,
          consumer_type: HOLD_CONSUMER_TYPE,
        });
      }
      state.generation = (await client.getInventories(d.rpUuid)).generation;
      onWrite();
      this.opts.log.info({ rpUuid: d.rpUuid, acceleratorId: d.id, holds: holds.add.length }, 'device handed over outside a Nova boot: held in Placement');
    }
    state.holders = key;
    const traits = planTraits(d.traits, state.traits);
    if (traits.write) {
      await Promise.all(traits.write.map((t) => this.ensure('trait', t)));
      state.generation = await client.putTraits(d.rpUuid, state.generation, traits.write);
      state.traits = traits.write;
      onWrite();
      for (const t of functionTraitsToDelete(traits.removed)) void client.deleteTrait(t).catch(() => undefined);
    }
    this.known.set(d.rpUuid, { ...state });
    return inv.flags;
  }

  /** The accelerator is gone: delete its provider, unless something is allocated on it. */
  private async remove(id: string, rpUuid: string, listing: Map<string, Provider> | null): Promise<ProviderOutcome> {
    if (listing && !listing.has(rpUuid)) {
      this.known.delete(rpUuid);
      return { ...base(id, rpUuid), status: 'in_sync' };
    }
    const r = await this.deleteOrHold(rpUuid);
    return { ...base(id, rpUuid), status: 'in_sync', flags: r.flags, generation: r.generation };
  }

  private async deleteOrHold(rpUuid: string): Promise<{ deleted: boolean; flags: SyncFlag[]; generation: number | null }> {
    const { client } = this.opts;
    for (let attempt = 1; ; attempt++) {
      try {
        await client.deleteProvider(rpUuid);
        this.known.delete(rpUuid);
        return { deleted: true, flags: [], generation: null };
      } catch (err) {
        if (!isPlacementError(err) || err.placementCode !== PlacementCodes.providerInUse) throw err;
      }
      // Cyborg's own holds on a device that is gone are freed with it; anyone else's keep it.
      if (attempt === 1 && (await this.dropHolds(rpUuid))) continue;
      try {
        const [usages, inv] = await Promise.all([client.getUsages(rpUuid), client.getInventories(rpUuid)]);
        const plan = planHold(inv.inventories, usages);
        const generation = plan.write ? (await client.putInventories(rpUuid, inv.generation, plan.write)).generation : inv.generation;
        return { deleted: false, flags: plan.flags, generation };
      } catch (err) {
        if (!isPlacementError(err) || !err.concurrentUpdate || attempt >= (this.opts.maxAttempts ?? 5)) throw err;
      }
    }
  }

  /** Deletes every hold Cyborg put on the provider; true when there was one. */
  private async dropHolds(rpUuid: string): Promise<boolean> {
    const consumers = await this.opts.client.providerAllocations(rpUuid);
    const size = Object.values(consumers).reduce((n, r) => n + Object.values(r).reduce((a, b) => a + b, 0), 0);
    const own = Object.keys(consumers).filter((c) => holdSlot(rpUuid, c, size) >= 0);
    for (const c of own) await this.opts.client.deleteAllocations(c);
    return own.length > 0;
  }

  /** Deletes Cyborg-owned providers under the host's compute node that no accelerator claims. */
  private async sweep(host: string, root: string, claimed: Set<string>): Promise<StaleOutcome[]> {
    let owned: Provider[];
    try {
      owned = await this.opts.client.providersInTree(root, [OWNER_TRAIT]);
    } catch (err) {
      this.opts.log.warn({ err, host }, 'could not list Cyborg-owned providers; stale ones are looked for next time');
      return [];
    }
    const stale = owned.filter((p) => p.uuid !== root && !claimed.has(p.uuid));
    return Promise.all(
      stale.map((p) =>
        this.limit(async (): Promise<StaleOutcome> => {
          try {
            const r = await this.deleteOrHold(p.uuid);
            this.opts.log.info(
              { host, rpUuid: p.uuid, rpName: p.name, deleted: r.deleted },
              r.deleted ? 'deleted a stale Cyborg provider' : 'stale Cyborg provider has allocations: kept',
            );
            return { host, rpUuid: p.uuid, name: p.name, deleted: r.deleted, flags: r.flags };
          } catch (err) {
            this.opts.log.warn({ err, host, rpUuid: p.uuid }, 'could not remove a stale Cyborg provider');
            return { host, rpUuid: p.uuid, name: p.name, deleted: false, flags: [] };
          }
        }),
      ),
    );
  }

  /**
   * What to plan from: the known state if the listing shows its generation unchanged, null if
   * the listing lacks the provider, undefined when it must be read.
   */
  private startingPoint(rpUuid: string, listing: Map<string, Provider> | null): Known | null | undefined {
    const known = this.known.get(rpUuid);
    if (!listing) return known ? { ...known } : undefined;
    const p = listing.get(rpUuid);
    if (!p) return null;
    return known && known.generation === p.generation ? { ...known } : undefined;
  }

  private async read(rpUuid: string): Promise<Known | null> {
    try {
      const [inv, tr] = await Promise.all([this.opts.client.getInventories(rpUuid), this.opts.client.getTraits(rpUuid)]);
      if (inv.generation !== tr.generation) return this.read(rpUuid); // changed between the two reads
      return { generation: inv.generation, inventories: inv.inventories, traits: tr.traits };
    } catch (err) {
      if (isPlacementError(err) && err.notFound) return null;
      throw err;
    }
  }

  /** Custom resource classes and traits are created once per process (standard ones exist). */
  private ensure(kind: 'rc' | 'trait', name: string): Promise<void> {
    if (!name.startsWith('CUSTOM_')) return Promise.resolve();
    const key = `${kind}:${name}`;
    let p = this.ensured.get(key);
    if (!p) {
      p = kind === 'rc' ? this.opts.client.ensureResourceClass(name) : this.opts.client.ensureTrait(name);
      p.catch(() => this.ensured.delete(key));
      this.ensured.set(key, p);
    }
    return p;
  }

  /** Forgets which custom classes and traits exist (someone may have deleted one by hand). */
  forgetEnsured(): void {
    this.ensured.clear();
  }

  private throwIfDown(): void {
    if (this.down) throw this.down;
  }

  private failed(id: string, rpUuid: string, err: unknown): ProviderOutcome {
    if (isPlacementError(err) && err.unavailable) {
      // No answer (or a gateway's 502-504) means it is down: stop the pass. A 500 that
      // persisted through the client's retries is this provider's problem: retry it soon.
      if (err.httpStatus === 0 || err.httpStatus >= 502) this.down ??= err;
      return { ...base(id, rpUuid), status: 'pending', reason: `Placement unavailable: ${err.message}`, retry: true };
    }
    if (err instanceof RootProviderMissingError) return { ...base(id, rpUuid), status: 'error', reason: err.message, retry: true };
    // A trait or class we believed existed was deleted by hand: forget them all and retry soon.
    const missingName = isPlacementError(err) && err.httpStatus === 400 && /trait|resource class/i.test(err.message);
    if (missingName) this.forgetEnsured();
    this.opts.log.warn({ err, acceleratorId: id, rpUuid, requestId: globalRequestId() }, 'placement sync failed for this provider');
    return { ...base(id, rpUuid), status: 'error', reason: err instanceof Error ? err.message : String(err), retry: missingName };
  }
}

/** Pause before re-reading a provider that moved under us: 10–20 ms, doubling per attempt. */
export function retryPauseMs(attempt: number): number {
  return 10 * 2 ** (attempt - 1) * (1 + Math.random());
}

function base(id: string, rpUuid: string): ProviderOutcome {
  return { id, rpUuid, status: 'in_sync', reason: null, flags: [], generation: null, retry: false, repaired: false };
}
