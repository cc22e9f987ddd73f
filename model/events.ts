import { Type, type Static } from '@sinclair/typebox';
import { TRANSITION_ENDS } from '../machines/index.js';
import type { AcceleratorView } from './accelerator.js';
import type { ArqView } from './arq.js';
import type { HostView } from './host.js';

/**
 * A machine's state name, typed as today's names but validated as any bounded string: the log
 * keeps rows written by earlier releases, whose states may have had other names, and reading
 * them must never fail.
 */
const TransitionEnd = Type.Unsafe<(typeof TRANSITION_ENDS)[number]>(Type.String({ maxLength: 255 }));

/**
 * One committed transition of an accelerator, ARQ or host: what the journal stores, the event
 * stream shows and the conductors publish. `seq` numbers it in its conductor's commit order.
 */
export const TransitionEvent = Type.Object({
  seq: Type.Integer(),
  kind: Type.Union([Type.Literal('accelerator'), Type.Literal('arq'), Type.Literal('host'), Type.Literal('driver')]),
  id: Type.String(),
  host: Type.Optional(Type.String()),
  event: Type.String(),
  /** A machine's state name; `none` where a life starts (`NOT_YET`), `deleted` where a host's ends (`HOST_DELETED`). */
  from: TransitionEnd,
  to: TransitionEnd,
  at: Type.String(),
  requestId: Type.Optional(Type.String()),
  actor: Type.Optional(Type.String()),
  /** The caller's project, as Keystone told it (absent for automatic changes and noauth). */
  projectId: Type.Optional(Type.String()),
  /** The caller's user and project names as Keystone's token answer gave them, beside the ids (names change; ids do not). */
  actorName: Type.Optional(Type.String()),
  projectName: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String()),
  /** The action's arguments that matter to an auditor (a program's image, a driver's version); never secrets. */
  args: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]))),
});

/** A transition as committed, before the hub numbers it (what `history` returns). */
export const TransitionRecordSchema = Type.Omit(TransitionEvent, ['seq']);

export type TransitionEventMsg = Static<typeof TransitionEvent>;
export type TransitionRecord = Static<typeof TransitionRecordSchema>;
export type CommittedEvent = TransitionEventMsg;
export type Listener = (ev: CommittedEvent) => void;

/** What readers of committed transitions need: the conductor's hub, or an api process's copy of it. */
export interface EventFeed {
  subscribe(listener: Listener): () => void;
  since(cursor: number): { events: CommittedEvent[]; complete: boolean };
  readonly cursor: number;
}

/**
 * Committed transitions, numbered in commit order, for observers (event stream, visualizer,
 * Placement sync, Nova notifier). Keeps a ring of recent events so that a reconnecting client
 * can resume from its last cursor without missing anything.
 */
export class EventHub implements EventFeed {
  private seq = 0;
  // A fixed ring: event `seq` lives at index `(seq - 1) % capacity`. (Trimming an array with
  // splice on every publish showed up in profiles at 10,000 events.)
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

/** A committed event as the event stream sends it: stamped with when the API saw its commit. */
export type StreamEvent = CommittedEvent & { committedAt: number };

/**
 * One message of the event stream (SSE): the events committed since the last one, in commit
 * order, and the current committed view of everything they touched (so the page needs no extra
 * request per event). A view of `null` means the object is gone (a deleted ARQ, a removed accelerator).
 */
export interface EventBatch {
  cursor: number;
  events: StreamEvent[];
  accelerators: Record<string, AcceleratorView | null>;
  hosts: Record<string, HostView | null>;
  arqs: Record<string, ArqView | null>;
}
