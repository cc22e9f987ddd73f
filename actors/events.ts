import type { TransitionEventMsg } from '../bus/schemas.js';
import type { TransitionRecord } from './journal.js';

export type CommittedEvent = TransitionEventMsg;
export type Listener = (ev: CommittedEvent) => void;

/**
 * Committed transitions, numbered in commit order, for observers (event stream, visualizer,
 * Placement sync, Nova notifier). Keeps a ring of recent events so that a reconnecting client
 * can resume from its last cursor without missing anything.
 */
export class EventHub {
  private seq = 0;
  private ring: CommittedEvent[] = [];
  private listeners = new Set<Listener>();

  constructor(private readonly capacity = 10_000) {}

  publish(record: TransitionRecord): CommittedEvent {
    const ev: CommittedEvent = { seq: ++this.seq, ...record };
    this.ring.push(ev);
    if (this.ring.length > this.capacity) this.ring.splice(0, this.ring.length - this.capacity);
    for (const l of this.listeners) {
      try {
        l(ev);
      } catch {
        // An observer's bug must never break the transition that is being announced.
      }
    }
    return ev;
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Events after `cursor`; `complete` is false when the ring no longer holds all of them. */
  since(cursor: number): { events: CommittedEvent[]; complete: boolean } {
    const first = this.ring[0]?.seq ?? this.seq + 1;
    const events = this.ring.filter((e) => e.seq > cursor);
    return { events, complete: cursor + 1 >= first || this.ring.length === 0 };
  }

  get cursor(): number {
    return this.seq;
  }
}
