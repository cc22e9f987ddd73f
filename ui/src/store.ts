import type { AcceleratorView, ArqView, EventBatch, HostView, Snapshot, StreamEvent } from './types.js';
import { latency } from './measure.js';

export type Connection = 'connecting' | 'live' | 'lost';

type Listener = () => void;

/**
 * The page's copy of the committed state: a snapshot, then the event stream's batches applied on
 * top. Changes are applied at once but listeners run at most once per animation frame, so
 * hundreds of transitions per second cost one render per frame, not one per event.
 */
export class Store {
  readonly accelerators = new Map<string, AcceleratorView>();
  readonly hosts = new Map<string, HostView>();
  readonly arqs = new Map<string, ArqView>();
  /**
   * Keystone's names of the projects holding cards, by id (names.ts asks `GET /projects` for
   * them): the snapshot and the stream carry ids only, and a name is never worth a wait for them.
   */
  readonly projectNames = new Map<string, string>();
  cursor = 0;
  /** Bumps on every change: memoized views recompute on it. */
  version = 0;
  /** Bumps when accelerators appear or disappear: the base sort order is rebuilt only then. */
  membership = 0;
  connection: Connection = 'connecting';
  /** Why the stream last failed, shown while it reconnects. */
  lastError = '';
  /** The newest events, newest last: the live feed. */
  readonly recent: StreamEvent[] = [];
  private listeners = new Set<Listener>();
  private eventListeners = new Set<(ev: StreamEvent) => void>();
  private frame: number | null = null;
  private unrendered: StreamEvent[] = [];

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Every applied event, as it arrives (the detail panel follows its accelerator's history). */
  onEvent(fn: (ev: StreamEvent) => void): () => void {
    this.eventListeners.add(fn);
    return () => this.eventListeners.delete(fn);
  }

  load(s: Snapshot): void {
    this.accelerators.clear();
    this.hosts.clear();
    this.arqs.clear();
    for (const a of s.accelerators) this.accelerators.set(a.id, a);
    for (const h of s.hosts) this.hosts.set(h.name, h);
    for (const q of s.arqs) this.arqs.set(q.uuid, q);
    this.cursor = s.cursor;
    this.membership++;
    this.changed();
  }

  /**
   * Applies one batch. A batch at or before our cursor was already in the snapshot we loaded
   * (its views are older than the snapshot's), so it is skipped whole.
   */
  apply(b: EventBatch): void {
    if (b.cursor <= this.cursor) return;
    this.cursor = b.cursor;
    for (const [id, v] of Object.entries(b.accelerators)) {
      const old = this.accelerators.get(id);
      if (!v) {
        if (old) this.membership++;
        this.accelerators.delete(id);
      } else if (!old || v.generation >= old.generation) {
        if (!old) this.membership++;
        this.accelerators.set(id, v);
      }
    }
    for (const [name, v] of Object.entries(b.hosts)) {
      if (v) this.hosts.set(name, v);
      else this.hosts.delete(name);
    }
    for (const [uuid, v] of Object.entries(b.arqs)) {
      if (v) this.arqs.set(uuid, v);
      else this.arqs.delete(uuid);
    }
    for (const ev of b.events) {
      this.recent.push(ev);
      this.unrendered.push(ev);
      for (const l of this.eventListeners) l(ev);
    }
    if (this.recent.length > 200) this.recent.splice(0, this.recent.length - 100);
    if (this.unrendered.length > 20_000) this.unrendered.splice(0, this.unrendered.length - 10_000);
    this.changed();
  }

  /** Names learnt for project ids: the page shows them where it showed the ids. */
  nameProjects(named: Record<string, string>): void {
    let fresh = false;
    for (const [id, name] of Object.entries(named)) {
      if (this.projectNames.get(id) === name) continue;
      this.projectNames.set(id, name);
      fresh = true;
    }
    if (fresh) this.changed();
  }

  /** A project as people know it: Keystone's name where known, else the id. */
  projectLabel(id: string): string {
    return this.projectNames.get(id) ?? id;
  }

  setConnection(c: Connection, error = ''): void {
    if (c === this.connection && error === this.lastError) return;
    this.connection = c;
    this.lastError = error;
    this.changed();
  }

  /** Called after the page has rendered: what was applied is now on screen. */
  rendered(): void {
    if (this.unrendered.length === 0) return;
    latency.record(this.unrendered, Date.now());
    this.unrendered = [];
  }

  private changed(): void {
    this.version++;
    if (this.frame !== null) return;
    // A hidden tab gets no animation frames: state still updates, rendering waits.
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      for (const l of this.listeners) l();
    });
  }
}

export const store = new Store();
