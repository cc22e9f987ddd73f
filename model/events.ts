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
  // A fixed ring: event `seq` lives at index `(seq - 1) % capacity`. (Trimming an array with
  // splice on every publish cost ~9% of the runtime's CPU at 10,000 events.)
  private readonly ring: (CommittedEvent | undefined)[];
  private held = 0;
  private listeners = new Set<Listener>();

  constructor(private readonly capacity = 10_000) {
    this.ring = new Array<CommittedEvent | undefined>(capacity);
  }

  publish(record: TransitionRecord): CommittedEvent {
    const ev: CommittedEvent = { seq: ++this.seq, ...record };
    this.ring[(ev.seq - 1) % this.capacity] = ev;
    if (this.held < this.capacity) this.held++;
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
    const first = this.seq - this.held + 1;
    const events: CommittedEvent[] = [];
    for (let s = Math.max(cursor + 1, first); s <= this.seq; s++) events.push(this.ring[(s - 1) % this.capacity]!);
    return { events, complete: cursor + 1 >= first || this.held === 0 };
  }

  get cursor(): number {
    return this.seq;
  }
}
