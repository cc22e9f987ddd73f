import type { Logger } from 'pino';
import type { Bus, Unsubscribe } from '../bus/index.js';
import { Subjects } from '../bus/index.js';
import { CyborgError } from '../errors/index.js';
import type { TransitionEventMsg } from '../model/index.js';
import { ViewsBatch, type SnapshotPageMsg, type ViewsBatchMsg } from './messages.js';
import { maxPayloadOf } from './payload.js';
import { ReadModel } from './read-model.js';
import { VIEWS_BEACON_MS } from './view-publisher.js';

/** Fetches one snapshot page from `subject` (a conductor's, or the shared one). */
export type PageFetcher = (subject: string, args: { cursor?: SnapshotPageMsg['next'] & object; maxBytes?: number }) => Promise<SnapshotPageMsg>;

export interface ViewSyncOptions {
  bus: Bus;
  log: Logger;
  fetchPage: PageFetcher;
  /** Receives each complete model: the first, and every one rebuilt after a gap. */
  onModel: (m: ReadModel) => void;
  /** The model views messages are applied to, between two rebuilds. */
  current: () => ReadModel;
  /** Transitions of each applied views message, after its views. */
  onTransitions: (t: TransitionEventMsg[]) => void;
  /** A conductor's expected silence at most (its beacon period); a longer one means a loss. */
  beaconMs?: number;
}

interface Incarnation {
  epoch: string;
  seq: number;
  heardAt: number;
}

export type SyncState = 'loading' | 'synced' | 'resyncing';

/**
 * Keeps an api process's read model equal to the conductors' committed state. The model is built
 * from paged snapshots, then kept by the numbered views messages each conductor publishes: message
 * `seq` of an incarnation is applied only right after `seq - 1`. Anything else — a gap (NATS
 * restarted, a message dropped), a conductor this process has not loaded (it started after the
 * api, or took over from a dead one), a number seen twice (a forged or replayed message), or a
 * conductor silent past its beacon — is refused with a log line and answered by a rebuild: every
 * conductor's snapshot into a fresh model, then the views numbered after each snapshot replayed on
 * top, then the swap. Until the first model is complete the process is not ready.
 */
export class ViewSync {
  private known = new Map<string, Incarnation>();
  /** Conductors heard of but not loaded: asked for a snapshot on their own subject at the next rebuild. */
  private candidates = new Set<string>();
  /** Views heard while a rebuild is under way, replayed on the fresh model. */
  private buffer: ViewsBatchMsg[] | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private off: Unsubscribe | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private readonly first = Promise.withResolvers<void>();
  private reason: string | undefined = 'loading the view from the conductors';
  state: SyncState = 'loading';
  /** Snapshot pages refused as out of order (another conductor's, or not after the page asked for). */
  refusedPages = 0;
  /** How many rebuilds have completed (the first load included). */
  rebuilds = 0;

  constructor(private readonly o: ViewSyncOptions) {}

  /** Subscribes, then loads (retrying until a conductor answers); resolves once the first model is complete. */
  start(): Promise<void> {
    this.stopped = false;
    this.off = this.o.bus.subscribe(Subjects.views, ViewsBatch, (b) => this.onViews(b));
    const beacon = this.o.beaconMs ?? VIEWS_BEACON_MS;
    this.watchdog = setInterval(() => this.checkSilence(3 * beacon + 1_000), beacon);
    this.watchdog.unref();
    this.resync('start');
    return this.first.promise;
  }

  stop(): void {
    this.stopped = true;
    this.off?.();
    clearInterval(this.watchdog);
  }

  /** The conductors whose state the view holds (each answers for its own writes). */
  conductors(): string[] {
    return [...this.known.keys()];
  }

  /** Why the view is not complete and current, or undefined when it is. */
  notReady(): string | undefined {
    return this.state === 'synced' ? undefined : this.reason;
  }

  /** Asks for a rebuild (one runs at a time; a request during one runs another after it). */
  resync(why: string): void {
    if (this.stopped) return;
    if (this.state === 'synced') {
      this.state = 'resyncing';
      this.reason = `resyncing: ${why}`;
    }
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop(why).finally(() => (this.running = undefined));
  }

  private async loop(why: string): Promise<void> {
    for (let delay = 250; !this.stopped; ) {
      this.again = false;
      try {
        await this.rebuild(why);
        if (!this.again) return;
        why = 'views arrived out of order during the rebuild';
        continue;
      } catch (err) {
        this.buffer = undefined;
        this.o.log.warn({ err: (err as Error).message, retryInMs: delay }, 'could not load the view from the conductors; retrying');
        await new Promise((r) => setTimeout(r, delay).unref());
        delay = Math.min(delay * 2, 2_000);
      }
    }
  }

  private async rebuild(why: string): Promise<void> {
    this.buffer = [];
    const fresh = new ReadModel();
    const loaded = new Map<string, Incarnation>();
    const first = await this.loadFrom(Subjects.conductorApi, fresh);
    loaded.set(first.conductorId, first);
    const listed = new Set(first.conductors);
    const others = new Set([...first.conductors, ...this.candidates]);
    this.candidates.clear();
    for (const id of others) {
      if (loaded.has(id)) continue;
      try {
        const p = await this.loadFrom(Subjects.conductorApiOf(id), fresh);
        loaded.set(p.conductorId, p);
      } catch (err) {
        // A conductor the lease table names must answer; a name heard only in a views message
        // may be a forgery or a conductor that is gone: it is left out.
        if (listed.has(id)) throw err;
        this.o.log.warn({ conductorId: id, err: (err as Error).message }, 'a conductor heard of did not answer a snapshot; left out of the view');
      }
    }
    // No await from here on: the buffered views and the swap happen in one turn, nothing slips between.
    const buffered = this.buffer;
    this.buffer = undefined;
    const transitions: TransitionEventMsg[] = [];
    for (const b of buffered) {
      const inc = loaded.get(b.conductorId);
      if (!inc || inc.epoch !== b.epoch) {
        this.refuse(b, 'from a conductor incarnation this api has not loaded');
        this.candidates.add(b.conductorId);
        this.again = true;
        continue;
      }
      if (b.seq <= inc.seq) continue;
      if (b.seq !== inc.seq + 1) {
        this.refuse(b, `a gap after ${inc.seq}`);
        this.again = true;
        continue;
      }
      inc.seq = b.seq;
      fresh.applyViews(b);
      transitions.push(...b.transitions);
    }
    const now = Date.now();
    for (const inc of loaded.values()) inc.heardAt = now;
    this.known = loaded;
    this.o.onModel(fresh);
    this.rebuilds++;
    if (transitions.length > 0) this.o.onTransitions(transitions);
    this.o.log.info({ ...fresh.counts(), conductors: [...loaded.keys()], why }, 'read model loaded from the conductors');
    if (!this.again) {
      this.state = 'synced';
      this.reason = undefined;
      this.first.resolve();
    }
  }

  /** Every page of one conductor's snapshot, into `into`; the incarnation and number of its first page. */
  private async loadFrom(subject: string, into: ReadModel): Promise<Incarnation & { conductorId: string; conductors: string[] }> {
    const maxBytes = Number.isFinite(maxPayloadOf(this.o.bus)) ? maxPayloadOf(this.o.bus) : undefined;
    let page = await this.o.fetchPage(subject, { ...(maxBytes ? { maxBytes } : {}) });
    const head = { conductorId: page.conductorId, epoch: page.epoch, seq: page.seq, heardAt: 0, conductors: page.conductors };
    into.applyPage(page);
    while (page.next) {
      // The next pages from the same conductor: its cursor means nothing to another.
      const next: SnapshotPageMsg = await this.o.fetchPage(Subjects.conductorApiOf(head.conductorId), { cursor: page.next, ...(maxBytes ? { maxBytes } : {}) });
      if (next.epoch !== head.epoch) throw new CyborgError('bus.no_responder', `conductor ${head.conductorId} restarted during its snapshot`);
      const outOfOrder = pageOutOfOrder(head.conductorId, page.next, next);
      if (outOfOrder) {
        this.refusedPages++;
        this.o.log.warn({ conductorId: head.conductorId, pageFrom: next.conductorId, why: outOfOrder }, 'refused a snapshot page; the view is rebuilt again');
        throw new CyborgError('bus.invalid_message', `snapshot page refused: ${outOfOrder}`, { conductorId: head.conductorId });
      }
      into.applyPage(next);
      page = next;
    }
    return head;
  }

  private onViews(b: ViewsBatchMsg): void {
    if (this.buffer) {
      this.buffer.push(b);
      return;
    }
    const inc = this.known.get(b.conductorId);
    if (!inc || inc.epoch !== b.epoch) {
      this.refuse(b, 'from a conductor incarnation this api has not loaded');
      this.candidates.add(b.conductorId);
      this.resync(`views from conductor ${b.conductorId} not loaded yet`);
      return;
    }
    if (b.seq !== inc.seq + 1) {
      this.refuse(b, b.seq <= inc.seq ? `a number already applied (last ${inc.seq})` : `a gap after ${inc.seq}`);
      this.resync(`a gap in conductor ${b.conductorId}'s views (${inc.seq} then ${b.seq})`);
      return;
    }
    inc.seq = b.seq;
    inc.heardAt = Date.now();
    this.o.current().applyViews(b);
    if (b.transitions.length > 0) this.o.onTransitions(b.transitions);
  }

  private refuse(b: ViewsBatchMsg, why: string): void {
    this.o.log.warn({ conductorId: b.conductorId, epoch: b.epoch, seq: b.seq, why }, 'refused a views message');
  }

  private checkSilence(silentMs: number): void {
    if (this.state !== 'synced') return;
    const now = Date.now();
    for (const [id, inc] of this.known) {
      if (now - inc.heardAt > silentMs) {
        this.o.log.warn({ conductorId: id, silentMs: now - inc.heardAt }, "a conductor's views went silent; rebuilding the view");
        this.resync(`conductor ${id} silent`);
        return;
      }
    }
  }
}

const PART_ORDER: readonly string[] = ['hosts', 'arqs', 'documents'];

/**
 * Why a snapshot page asked for with `asked` cannot be the one that follows, or undefined: it is
 * another conductor's, or it holds an item at or before the cursor it was asked from (a page
 * repeated, or a reply to another request), or its own cursor does not move on.
 */
export function pageOutOfOrder(conductorId: string, asked: SnapshotPageMsg['next'], page: SnapshotPageMsg): string | undefined {
  if (page.conductorId !== conductorId) return `a page of conductor ${page.conductorId} where ${conductorId}'s was asked for`;
  if (!asked) return undefined;
  const first = firstKey(page);
  if (first && before(first, asked))
    return `its first item (${first.part} ${first.key}) is not after the cursor asked from (${asked.part} ${asked.after ?? 'start'})`;
  if (page.next && before(page.next, asked))
    return `its cursor (${page.next.part} ${page.next.after ?? 'start'}) does not move past the one asked from (${asked.part} ${asked.after ?? 'start'})`;
  return undefined;
}

function firstKey(p: SnapshotPageMsg): { part: string; key: string } | undefined {
  if (p.hosts[0]) return { part: 'hosts', key: p.hosts[0].view.name };
  if (p.arqs[0]) return { part: 'arqs', key: p.arqs[0].uuid };
  if (p.documents[0]) return { part: 'documents', key: `${p.documents[0].collection}/${p.documents[0].id}` };
  return undefined;
}

/** Whether position `a` comes at or before `b` in a snapshot's key order (null: the part's start). */
function before(a: { part: string; key?: string | null; after?: string | null }, b: { part: string; after: string | null }): boolean {
  const pa = PART_ORDER.indexOf(a.part);
  const pb = PART_ORDER.indexOf(b.part);
  if (pa !== pb) return pa < pb;
  const ka = a.key ?? a.after ?? null;
  if (b.after === null) return ka === null;
  return ka === null || ka <= b.after;
}
