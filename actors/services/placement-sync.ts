import pLimit from 'p-limit';
import type { Logger } from 'pino';
import { createActor, fromPromise, type Actor } from 'xstate';
import { placementSyncMachine, type PassResult, type SyncWork } from '../../machines/index.js';
import { placementAllocations, type ProviderAllocations } from './allocation-guard.js';
import { microversionAtLeast, MIN_MICROVERSION, type PlacementClient } from '../../openstack/placement/index.js';
import { desiredOf } from '../../openstack/placement/index.js';
import { passCounter, repairCounter, trackDrift, type DriftKind } from '../../openstack/placement/index.js';
import { Reconciler, type ProviderOutcome, type StaleOutcome } from '../../openstack/placement/index.js';
import { RootProviders } from '../../openstack/placement/index.js';
import { withGlobalRequestId } from '../../openstack/request-id.js';
import type { AcceleratorView, CommittedEvent, PlacementStatusView } from '../../model/index.js';

/** What the sync reads from the conductor: committed transitions and the committed views. */
export interface PlacementSyncSource {
  readonly hub: { subscribe(listener: (ev: CommittedEvent) => void): () => void };
  listAccelerators(): AcceleratorView[];
  /** Accelerators reported with other traits, class or size (no transition says so): synced at once. */
  readonly respecified?: { subscribe(listener: (ids: string[]) => void): () => void };
}

export interface PlacementSyncOptions {
  source: PlacementSyncSource;
  client: PlacementClient;
  log: Logger;
  /** Cyborg's `resource_provider_name`: `{host}` is replaced by the agent's host name. */
  resourceProviderName: string;
  /** Nova-less: create the compute node's root provider when Placement has none. */
  createRootProviders: boolean;
  /** A full reconcile (out-of-band changes, stale providers) at least this often. */
  intervalMs: number;
  /** Placement requests in flight at once. */
  concurrency: number;
}

/**
 * The actor under the conductor that keeps Placement telling the truth about accelerators.
 * Committed transitions mark accelerators changed; the loop (machines/placement-sync) runs one
 * pass at a time, merges bursts, reconciles everything on a timer, and backs off while Placement
 * is down — transitions never wait for Placement, the loop catches up.
 */
export class PlacementSync {
  private readonly statuses = new Map<string, PlacementStatusView>();
  private readonly stale = new Map<string, StaleOutcome>();
  private readonly reconciler: Reconciler;
  private readonly roots: RootProviders;
  private actor: Actor<typeof placementSyncMachine> | null = null;
  private unsubscribe: (() => void) | null = null;
  private untrack: (() => void) | null = null;
  private fullStarted = 0;
  private fullDone = 0;
  private fullWaiters: { until: number; resolve: () => void }[] = [];
  private wasDown = false;
  /** The request behind each accelerator's latest committed change: its sync goes to Placement under that global request id. */
  private readonly requestOf = new Map<string, string>();

  constructor(private readonly opts: PlacementSyncOptions) {
    const roots = (this.roots = new RootProviders({
      client: opts.client,
      log: opts.log,
      nameTemplate: opts.resourceProviderName,
      createRoots: opts.createRootProviders,
    }));
    this.reconciler = new Reconciler({ client: opts.client, roots, log: opts.log, concurrency: opts.concurrency });
  }

  /** A host deleted from Cyborg: the root provider this sync created for it goes too (RootProviders.deleteCreated). */
  deleteCreatedRoot(host: string): Promise<boolean> {
    return this.roots.deleteCreated(host);
  }

  start(): void {
    const machine = placementSyncMachine.provide({
      actors: { pass: fromPromise<PassResult, SyncWork>(({ input }) => this.pass(input)) },
      delays: { interval: this.opts.intervalMs },
    });
    this.actor = createActor(machine);
    const offHub = this.opts.source.hub.subscribe((ev) => {
      if (ev.kind !== 'accelerator') return;
      // Kept until the sync it asks for has run (a later step of the same change, a driver's
      // answer, carries it too; an automatic one carries none and leaves it).
      if (ev.requestId) this.requestOf.set(ev.id, ev.requestId);
      this.markPending(ev.id);
      this.actor?.send({ type: 'CHANGED', ids: [ev.id] });
    });
    // A reboot or an out-of-band change can give a device other traits with no transition: its
    // provider loses the old ones now, not at the next full pass (Cyborg's bug 1928174 kept them).
    const offSpec = this.opts.source.respecified?.subscribe((ids) => {
      for (const id of ids) this.markPending(id);
      this.actor?.send({ type: 'CHANGED', ids });
    });
    this.unsubscribe = () => {
      offHub();
      offSpec?.();
    };
    this.untrack = trackDrift(this);
    this.actor.start();
    void this.checkVersion();
    this.opts.log.info({ placementUrl: this.opts.client.url, intervalMs: this.opts.intervalMs }, 'placement sync started');
  }

  stop(): void {
    this.unsubscribe?.();
    this.untrack?.();
    this.actor?.stop();
    this.actor = null;
    for (const w of this.fullWaiters) w.resolve();
    this.fullWaiters = [];
  }

  /** One accelerator's sync state; undefined before the sync first looked at it. */
  status(id: string): PlacementStatusView | undefined {
    return this.statuses.get(id);
  }

  /** Stale Cyborg providers kept because something is allocated on them. */
  heldStale(): StaleOutcome[] {
    return [...this.stale.values()];
  }

  drift(): Record<DriftKind, number> {
    const d: Record<DriftKind, number> = { pending: 0, error: 0, held: 0, stale: this.stale.size };
    for (const s of this.statuses.values()) {
      if (s.status !== 'in_sync') d[s.status]++;
      else if (s.flags.length > 0) d.held++;
    }
    return d;
  }

  /** Asks for a full pass now; resolves when one that started after this call has finished. */
  reconcileNow(): Promise<void> {
    const p = new Promise<void>((resolve) => this.fullWaiters.push({ until: this.fullStarted + 1, resolve }));
    this.actor?.send({ type: 'RECONCILE' });
    return p;
  }

  /** One reconcile pass: the changed accelerators, or all of them (plus stale providers). */
  private async pass(work: SyncWork): Promise<PassResult> {
    if (work.full) this.fullStarted++;
    try {
      return await this.runPass(work);
    } finally {
      if (work.full) this.finishFullPass();
    }
  }

  private async runPass(work: SyncWork): Promise<PassResult> {
    this.reconciler.beginPass();
    const views = this.opts.source.listAccelerators();
    const claimed = new Set(views.map((v) => v.rpUuid));
    const wanted = new Set(work.ids);
    const scope = work.full ? views : views.filter((v) => wanted.has(v.id));
    for (const v of scope) if (!this.statuses.has(v.id)) this.markPending(v.id);
    const byHost = new Map<string, AcceleratorView[]>();
    for (const v of scope) byHost.set(v.host, [...(byHost.get(v.host) ?? []), v]);
    const limit = pLimit(this.opts.concurrency);
    let progressed = false;
    const results = await Promise.all(
      [...byHost].map(([host, vs]) =>
        limit(() => {
          // A change made for a request is synced under its id, so Placement's log names it too.
          const requestId = work.full ? undefined : vs.map((v) => this.requestOf.get(v.id)).find(Boolean);
          for (const v of vs) this.requestOf.delete(v.id);
          if (requestId) this.opts.log.info({ host, requestId, accelerators: vs.map((v) => v.id) }, 'placement sync for a request');
          return withGlobalRequestId(requestId, async () => {
            const r = await this.reconciler.syncHost(host, vs.map(desiredOf), { full: work.full, claimed });
            // Each host says in_sync as soon as it is: on a cold start Nova's first hosts are
            // usable long before the pass is over, in the order hosts came.
            for (const o of r.outcomes) if (this.record(o)) progressed = true;
            return r;
          });
        }),
      ),
    );
    const outcomes = results.flatMap((r) => r.outcomes);
    if (work.full)
      this.recordStale(
        views,
        results.flatMap((r) => r.stale),
      );
    const retry = outcomes.find((o) => o.retry);
    this.noteAvailability();
    passCounter.inc({ kind: work.full ? 'full' : 'changes', result: retry ? 'retry' : 'ok' });
    return retry ? { retry: true, reason: retry.reason ?? 'retry', progressed } : { retry: false };
  }

  /** Records a provider's outcome; true when it came into sync with this one (it was not before). */
  private record(o: ProviderOutcome): boolean {
    if (o.repaired) {
      repairCounter.inc();
      this.opts.log.info({ acceleratorId: o.id, rpUuid: o.rpUuid }, 'placement provider changed outside Cyborg: repaired');
    }
    const prev = this.statuses.get(o.id);
    const syncedAt = o.status === 'in_sync' ? new Date().toISOString() : (prev?.syncedAt ?? null);
    if (o.flags.length > 0 && JSON.stringify(prev?.flags) !== JSON.stringify(o.flags)) {
      this.opts.log.warn({ acceleratorId: o.id, rpUuid: o.rpUuid, flags: o.flags }, 'placement provider kept for its allocations');
    }
    this.statuses.set(o.id, { status: o.status, reason: o.reason, flags: o.flags, generation: o.generation, syncedAt });
    return o.status === 'in_sync' && prev?.status !== 'in_sync';
  }

  private recordStale(views: AcceleratorView[], stale: StaleOutcome[]): void {
    this.stale.clear();
    for (const s of stale) if (!s.deleted) this.stale.set(s.rpUuid, s);
    // Accelerators the conductor no longer has need no status.
    const ids = new Set(views.map((v) => v.id));
    for (const id of this.statuses.keys()) if (!ids.has(id)) this.statuses.delete(id);
  }

  private markPending(id: string): void {
    const prev = this.statuses.get(id);
    this.statuses.set(id, {
      status: 'pending',
      reason: 'a committed change is not in Placement yet',
      flags: prev?.flags ?? [],
      generation: prev?.generation ?? null,
      syncedAt: prev?.syncedAt ?? null,
    });
  }

  private finishFullPass(): void {
    this.fullDone++;
    const done = this.fullWaiters.filter((w) => this.fullDone >= w.until);
    this.fullWaiters = this.fullWaiters.filter((w) => this.fullDone < w.until);
    for (const w of done) w.resolve();
  }

  /** Says once when Placement goes away and once when it is back, not on every pass. */
  private noteAvailability(): void {
    const down = this.reconciler.unavailable;
    if (down && !this.wasDown)
      this.opts.log.warn({ err: down, placementUrl: this.opts.client.url }, 'Placement unavailable: transitions go on, the sync catches up when it returns');
    if (!down && this.wasDown) this.opts.log.info({ placementUrl: this.opts.client.url }, 'Placement is back: sync caught up');
    this.wasDown = down !== null;
  }

  private async checkVersion(): Promise<void> {
    try {
      const max = await this.opts.client.maxMicroversion();
      if (!microversionAtLeast(max, MIN_MICROVERSION)) {
        this.opts.log.error({ max, needed: MIN_MICROVERSION }, 'Placement is too old for the sync');
      }
    } catch {
      // Unreachable now: the loop says so and retries.
    }
  }
}

/** How a role runs the sync (from `[placement]`: roles/placement.ts). */
export type PlacementSyncSettings = Pick<PlacementSyncOptions, 'resourceProviderName' | 'createRootProviders' | 'intervalMs' | 'concurrency'>;

/** Starts the Placement sync beside a conductor; the conductor reads its state through its `placement` option. */
export function startPlacementSync(source: PlacementSyncSource, client: PlacementClient, settings: PlacementSyncSettings, log: Logger): PlacementSync {
  const sync = new PlacementSync({ source, client, log, ...settings });
  sync.start();
  return sync;
}

/** What a conductor reads of the Placement sync beside it: each accelerator's sync state, each provider's allocations. */
export interface PlacementPort {
  status(id: string): PlacementStatusView | undefined;
  allocations: ProviderAllocations;
  /** Frees `consumer`'s allocation on provider `rpUuid` only (an operator's release from a dead card); false: none there. */
  releaseConsumer?(consumer: string, rpUuid: string): Promise<boolean>;
  /** A host deleted: the root provider Cyborg itself created for it (`create_root_providers`) is deleted; false: none, or not Cyborg's. */
  forgetHost?(host: string): Promise<boolean>;
}

/** A role's Placement: the conductor's `placement` option now (`port`), the sync once the conductor it reads exists (`start`). */
export interface PlacementLink {
  port?: PlacementPort;
  start(source: PlacementSyncSource): PlacementSync | null;
}

/** The link for `client` (null: no Placement configured, nothing to start). */
export function placementLink(client: PlacementClient | null, settings: PlacementSyncSettings, log: Logger): PlacementLink {
  if (!client) return { start: () => null };
  let sync: PlacementSync | undefined;
  return {
    port: {
      status: (id) => sync?.status(id),
      allocations: placementAllocations(client),
      releaseConsumer: (consumer, rp) => client.releaseProvider(consumer, rp),
      forgetHost: (host) => sync?.deleteCreatedRoot(host) ?? Promise.resolve(false),
    },
    start: (source) => (sync = startPlacementSync(source, client, settings, log)),
  };
}
