import { createActor, type AnyActorRef, type AnyStateMachine, type SnapshotFrom } from 'xstate';
import type { Logger } from 'pino';
import type { MachineRecord, TransitionRecord } from './journal.js';

export interface RequestMeta {
  requestId?: string;
  actor?: string;
}

/** Called once per state change, with the event that caused it. */
export type TransitionSink = (record: Omit<TransitionRecord, 'kind' | 'id' | 'host'>, persisted: MachineRecord) => void;

/** What a hosted machine reports to the actor that owns it. */
export interface MachineOwner {
  onTransition: TransitionSink;
  /** The machine's actor stopped with an error (an action or guard threw). */
  onCrash(err: unknown): void;
  /** After every macrostep, changed state or not, with the snapshot the actor is about to hold. */
  onStep?(snapshot: { value: unknown; status: string; hasTag(tag: string): boolean }): void;
}

export interface MachineHostOptions<M extends AnyStateMachine> {
  machine: M;
  input: unknown;
  /** Restore from a persisted record instead of starting fresh. */
  record?: MachineRecord;
  owner: MachineOwner;
  log: Logger;
}

/**
 * Machines whose every macrostep is reported to the host of the actor running it. One wrapper per
 * machine, shared by all its actors: the step is found by the actor (`scope.self`).
 *
 * Why not xstate's `inspect` option: it builds and spreads an inspection event for every event,
 * action and microstep of every actor (6% of the runtime's CPU in bench:persistence), and each
 * actor needs its own inspector closure — a few hundred bytes of each of 100,000 actors.
 */
const TRACKED = new WeakMap<AnyStateMachine, AnyStateMachine>();
const HOST = Symbol('cyborg.machineHost');
type Hosted = { [HOST]?: MachineHost<AnyStateMachine> };

function tracked<M extends AnyStateMachine>(machine: M): M {
  let t = TRACKED.get(machine);
  if (!t) {
    t = Object.create(machine) as M;
    t.transition = (snapshot, event, scope) => {
      const next = machine.transition(snapshot, event, scope);
      (scope.self as unknown as Hosted)[HOST]?.step(next, event);
      return next;
    };
    TRACKED.set(machine, t);
  }
  return t as M;
}

export const NO_META: RequestMeta = Object.freeze({});

/**
 * Runs one XState actor and turns its state changes into transition records: the common part of
 * the ARQ and host actors (the accelerator's machine runs on FlatHost, flat-host.ts). Keeps who
 * asked for the current change, so that internal follow-ups (a bind finishing) are attributed to
 * the same request.
 */
export class MachineHost<M extends AnyStateMachine> {
  readonly actor: AnyActorRef;
  private lastValue: string;
  private meta: RequestMeta = NO_META;
  private readonly owner: MachineOwner;

  constructor(opts: MachineHostOptions<M>) {
    this.owner = opts.owner;
    const snapshot = opts.record
      ? opts.machine.resolveState({ value: opts.record.value, context: opts.record.context } as never)
      : undefined;
    this.actor = createActor(tracked(opts.machine), { input: opts.input as never, snapshot: snapshot as never });
    (this.actor as unknown as Hosted)[HOST] = this as unknown as MachineHost<AnyStateMachine>;
    this.lastValue = String((this.actor.getSnapshot() as { value: unknown }).value);
    // xstate takes the observer's methods: `error` only (see below).
    this.actor.subscribe(this);
  }

  start(): this {
    this.actor.start();
    return this;
  }

  stop(): void {
    this.actor.stop();
  }

  get snapshot(): SnapshotFrom<M> {
    return this.actor.getSnapshot() as SnapshotFrom<M>;
  }

  get value(): string {
    return String((this.snapshot as unknown as { value: unknown }).value);
  }

  record(): MachineRecord {
    const s = this.snapshot as unknown as { value: unknown; context: Record<string, unknown> };
    // XState never mutates a context (assign makes a new one), so the record can share it.
    return { value: String(s.value), context: s.context };
  }

  /** Sends an event on behalf of `meta` (its request id and requester land in the log). */
  send(event: { type: string } & Record<string, unknown>, meta: RequestMeta = NO_META): void {
    this.meta = meta;
    this.actor.send(event);
  }

  /** The actor's error observer: the machine crashed. */
  error(err: unknown): void {
    this.owner.onCrash(err);
  }

  /** @internal Called by the tracked machine after each macrostep of this host's actor. */
  step(next: unknown, event: { type: string }): void {
    const snap = next as { value: unknown; context: Record<string, unknown>; status: string; hasTag(tag: string): boolean };
    if (snap.status === 'error') return;
    const to = String(snap.value);
    if (to !== this.lastValue) {
      const from = this.lastValue;
      this.lastValue = to;
      this.owner.onTransition(changeOf(from, to, snap.context, event, this.meta), { value: to, context: snap.context });
    }
    this.owner.onStep?.(snap);
  }
}

/**
 * The log record of a state change from `from` to `to` caused by `event` on behalf of `meta`; an
 * error state carries the reason the context gives.
 */
export function changeOf(from: string, to: string, context: Record<string, unknown>, event: { type: string }, meta: RequestMeta): Omit<TransitionRecord, 'kind' | 'id' | 'host'> {
  const ctxErr = (context as { error?: { reason?: string } | string | null }).error;
  const reason = typeof ctxErr === 'string' ? ctxErr : ctxErr?.reason;
  const rec: Omit<TransitionRecord, 'kind' | 'id' | 'host'> = { event: event.type, from, to, at: new Date().toISOString() };
  if (meta.requestId) rec.requestId = meta.requestId;
  if (meta.actor) rec.actor = meta.actor;
  if (reason && (to === 'error' || /Failed$/.test(to))) rec.reason = reason;
  return rec;
}
