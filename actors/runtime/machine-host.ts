import {
  createActor,
  type Actor,
  type AnyActorScope,
  type AnyStateMachine,
  type ContextFrom,
  type EventObject,
  type SnapshotFrom,
  type StateValueFrom,
} from 'xstate';
import type { MachineRecord } from './journal.js';
import type { RequestMeta, TransitionRecord } from '../../model/index.js';
import { isFailureState, type TransitionEnd } from '../../machines/index.js';

/** Called once per state change, with the event that caused it. */
export type TransitionSink<C = Record<string, unknown>> = (record: Omit<TransitionRecord, 'kind' | 'id' | 'host'>, persisted: MachineRecord<C>) => void;

/** The face of a snapshot an owner reads after each step. */
export interface StepSnapshot {
  value: unknown;
  status: string;
  hasTag(tag: string): boolean;
}

/** What a hosted machine reports to the actor that owns it. */
export interface MachineOwner<C = Record<string, unknown>> {
  onTransition: TransitionSink<C>;
  /** The machine's actor stopped with an error (an action or guard threw). */
  onCrash(err: unknown): void;
  /** After every macrostep, changed state or not, with the snapshot the actor now holds. */
  onStep?(snapshot: StepSnapshot): void;
}

export interface MachineHostOptions<M extends AnyStateMachine> {
  machine: M;
  /** The machine's input when it starts fresh (ignored when `record` is given). */
  input?: unknown;
  /** Restore from a persisted record instead of starting fresh. */
  record?: MachineRecord<ContextFrom<M>>;
  owner: MachineOwner<ContextFrom<M>>;
}

export const NO_META: RequestMeta = Object.freeze({});

/** A machine's state names, as XState infers them from its config (every machine here is flat). */
type StateOf<M extends AnyStateMachine> = Extract<StateValueFrom<M>, string>;

/** The host of each hosted actor, for the one event tap every machine shares (it only notes the event). */
const HOSTS = new WeakMap<object, { event: EventObject }>();

/** Each machine with its event tap (one per machine, not per actor). */
const TAPPED = new WeakMap<AnyStateMachine, AnyStateMachine>();

/**
 * The machine as the actor runs it, noting on the actor's host each event before it is processed,
 * so that the step it causes is recorded with it. Why not XState's inspection (`inspect`), which
 * reports the same: it turns every event, microstep, action and snapshot of every actor into an
 * inspection event on the hot path, for a caller that wants one of them. The tap is one property
 * write per event; the steps come from the actor's own subscription.
 */
function tapped<M extends AnyStateMachine>(machine: M): M {
  let t = TAPPED.get(machine);
  if (!t) {
    const transition = machine.transition.bind(machine);
    t = Object.create(machine, {
      transition: {
        value: (snapshot: unknown, event: EventObject, scope: AnyActorScope) => {
          const host = HOSTS.get(scope.self);
          if (host) host.event = event;
          return transition(snapshot as never, event, scope);
        },
      },
    }) as AnyStateMachine;
    TAPPED.set(machine, t);
  }
  return t as M;
}

const INIT: EventObject = Object.freeze({ type: 'xstate.init' });

type SnapshotOf<C = unknown> = StepSnapshot & { context: C };

/**
 * Runs one XState actor and turns its state changes into transition records, for every machine
 * of the conductor (accelerator, ARQ, host, driver). XState's actor gives the semantics: one
 * event at a time (an event an action sends waits its turn in the mailbox), nothing after a stop,
 * and a guard or action that throws stops the actor in error, keeping the snapshot it had before
 * that event — reported to the owner (`onCrash`), whose supervisor restarts it from its last
 * committed record. The host keeps who asked for the current change, so that the machine's own
 * follow-ups (a driver operation answering) are attributed to the same request.
 */
export class MachineHost<M extends AnyStateMachine> {
  readonly actor: Actor<M>;
  private lastValue: TransitionEnd;
  private meta: RequestMeta = NO_META;
  /** @internal The event the actor is processing (set by the machine's tap, `tapped`). */
  event: EventObject = INIT;
  private readonly owner: MachineOwner<ContextFrom<M>>;

  constructor(opts: MachineHostOptions<M>) {
    this.owner = opts.owner;
    const snapshot = opts.record ? restorable(opts.machine, opts.record) : undefined;
    this.actor = createActor(tapped(opts.machine), { input: opts.input, snapshot } as never) as Actor<M>;
    HOSTS.set(this.actor, this);
    this.lastValue = this.value as TransitionEnd;
    this.actor.subscribe({
      next: (snap) => this.step(snap as unknown as SnapshotOf<ContextFrom<M>>, this.event as { type: string } & Record<string, unknown>),
      error: (err: unknown) => this.owner.onCrash(err),
    });
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

  get value(): StateOf<M> {
    return String((this.actor.getSnapshot() as SnapshotOf).value) as StateOf<M>;
  }

  /** The machine's state and context now. */
  record(): MachineRecord<ContextFrom<M>> {
    const s = this.actor.getSnapshot() as SnapshotOf<ContextFrom<M>>;
    // XState never mutates a context (assign makes a new one), so the record can share it.
    return { value: String(s.value), context: s.context };
  }

  /** The record to keep while the machine is at rest: XState's persisted snapshot of it. */
  persisted(): MachineRecord<ContextFrom<M>> {
    // XState types a persisted snapshot as any actor's; a machine's carries its value and context.
    const p = this.actor.getPersistedSnapshot() as unknown as { value: unknown; context: ContextFrom<M> };
    return { value: String(p.value), context: p.context };
  }

  /** Sends an event on behalf of `meta` (its request id and requester land in the log). */
  send(event: { type: string } & Record<string, unknown>, meta: RequestMeta = NO_META): void {
    this.meta = meta;
    this.actor.send(event as never);
  }

  /** One macrostep of this host's actor, with the event that caused it. */
  step(snap: SnapshotOf<ContextFrom<M>>, event: { type: string } & Record<string, unknown>): void {
    if (snap.status === 'error') return;
    // One of the machine's own state names: XState reports nothing else.
    const to = String(snap.value) as TransitionEnd;
    if (to !== this.lastValue) {
      const from = this.lastValue;
      this.lastValue = to;
      this.owner.onTransition(changeOf(from, to, snap.context, event, this.meta), { value: to, context: snap.context });
    }
    this.owner.onStep?.(snap);
  }
}

/** A record as the snapshot XState restores an actor from (`createActor(machine, { snapshot })`). */
function restorable<M extends AnyStateMachine>(machine: M, record: MachineRecord<ContextFrom<M>>): unknown {
  return machine.resolveState({ value: record.value, context: record.context } as never);
}

/**
 * The log record of a state change from `from` to `to` caused by `event` on behalf of `meta`; an
 * error state carries the reason the context gives. The event is named in words an operator
 * reads (`timer: stale`, not `xstate.after.untilStale.host.online`); its arguments that matter
 * are kept (see `argsOf`). What the machine does by itself — a timer — is the conductor's, not
 * the last caller's: a host going stale was nobody's request.
 */
export function changeOf(
  from: TransitionEnd,
  to: TransitionEnd,
  context: object,
  event: { type: string } & Record<string, unknown>,
  meta: RequestMeta,
): Omit<TransitionRecord, 'kind' | 'id' | 'host'> {
  const ctxErr = (context as { error?: { reason?: string } | string | null }).error;
  const reason = typeof ctxErr === 'string' ? ctxErr : ctxErr?.reason;
  const rec: Omit<TransitionRecord, 'kind' | 'id' | 'host'> = { event: readableEvent(event.type), from, to, at: new Date().toISOString() };
  if (event.type.startsWith('xstate.after.')) {
    rec.actor = 'conductor';
  } else {
    if (meta.requestId) rec.requestId = meta.requestId;
    rec.actor = meta.actor ?? 'conductor';
    if (meta.projectId) rec.projectId = meta.projectId;
    if (meta.actorName) rec.actorName = meta.actorName;
    if (meta.projectName) rec.projectName = meta.projectName;
    const args = argsOf(event);
    if (args) rec.args = args;
  }
  if (reason && isFailureState(to)) rec.reason = reason;
  return rec;
}

/**
 * A driver operation's answer, as the accelerator's actor hands it to the machine: named like
 * XState's own `done: driver op`; its fields (`seq`, `output`) are bookkeeping, not arguments.
 */
const FOLLOW_UPS: Record<string, string> = { OP_DONE: 'done: driver op', OP_FAILED: 'failed: driver op' };

/** `untilStale` → `stale`, `opTimeout` → `op timeout`: a delay's name as words. */
function words(name: string): string {
  const bare = name.replace(/^until(?=[A-Z])/, '').replace(/(?<=[a-z])After$/, '');
  return bare.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
}

/**
 * XState's internal event names as an operator reads them; our own events (`ENABLE`,
 * `HEARTBEAT`) are already words and stay as they are.
 */
export function readableEvent(type: string): string {
  const followUp = FOLLOW_UPS[type];
  if (followUp) return followUp;
  if (!type.startsWith('xstate.')) return type;
  const [, kind, sub, name] = type.split('.');
  if (kind === 'after' && sub) return `timer: ${words(sub)}`;
  if (kind === 'done' && sub === 'actor') return name ? `done: ${words(name)}` : 'done';
  if (kind === 'error' && sub === 'actor') return name ? `failed: ${words(name)}` : 'failed';
  if (kind === 'init') return 'start';
  return type.slice('xstate.'.length);
}

/** Keys never written to the log, whatever event carries them. */
const SECRET = /pass(word)?|secret|token|credential|key$|auth/i;
const MAX_ARGS = 8;
const MAX_ARG_LEN = 255;

/**
 * What an operator's event asked for, as an auditor needs it: PROGRAM's bitstream or function id,
 * a driver operation's version, a maintenance mark's scope. Scalars only (an internal event's
 * payload — a driver's output — is not an argument), short, and never a field that looks like a
 * secret.
 */
export function argsOf(event: { type: string } & Record<string, unknown>): Record<string, string | number | boolean> | undefined {
  if (event.type.startsWith('xstate.') || FOLLOW_UPS[event.type]) return undefined;
  let out: Record<string, string | number | boolean> | undefined;
  let n = 0;
  for (const [k, v] of Object.entries(event)) {
    if (k === 'type' || SECRET.test(k) || n >= MAX_ARGS) continue;
    if (typeof v === 'string' ? v.length > MAX_ARG_LEN : typeof v !== 'number' && typeof v !== 'boolean') continue;
    if (typeof v === 'number' && !Number.isFinite(v)) continue;
    (out ??= {})[k] = v as string | number | boolean;
    n++;
  }
  return out;
}
