import { createActor, type AnyActorRef, type AnyStateMachine, type InspectionEvent, type SnapshotFrom } from 'xstate';
import type { Logger } from 'pino';
import type { MachineRecord, TransitionRecord } from './journal.js';

export interface RequestMeta {
  requestId?: string;
  actor?: string;
}

/** Called once per state change, with the event that caused it. */
export type TransitionSink = (record: Omit<TransitionRecord, 'kind' | 'id' | 'host'>, persisted: MachineRecord) => void;

export interface MachineHostOptions<M extends AnyStateMachine> {
  machine: M;
  input: unknown;
  /** Restore from a persisted record instead of starting fresh. */
  record?: MachineRecord;
  onTransition: TransitionSink;
  /** The machine's actor stopped with an error (an action or guard threw). */
  onCrash: (err: unknown) => void;
  log: Logger;
}

/**
 * Runs one XState actor and turns its state changes into transition records: the common part of
 * every actor that hosts a machine (accelerator, ARQ, host). Keeps who asked for the current
 * change, so that internal follow-ups (a driver op finishing) are attributed to the same request.
 */
export class MachineHost<M extends AnyStateMachine> {
  readonly actor: AnyActorRef;
  private lastValue: string;
  private meta: RequestMeta = {};

  constructor(private readonly opts: MachineHostOptions<M>) {
    const snapshot = opts.record
      ? opts.machine.resolveState({ value: opts.record.value, context: opts.record.context } as never)
      : undefined;
    this.actor = createActor(opts.machine, {
      input: opts.input as never,
      snapshot: snapshot as never,
      inspect: (ev) => this.inspect(ev),
    });
    this.lastValue = String((this.actor.getSnapshot() as { value: unknown }).value);
    this.actor.subscribe({
      error: (err: unknown) => opts.onCrash(err),
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

  get value(): string {
    return String((this.snapshot as unknown as { value: unknown }).value);
  }

  record(): MachineRecord {
    const s = this.snapshot as unknown as { value: unknown; context: Record<string, unknown> };
    // XState never mutates a context (assign makes a new one), so the record can share it.
    return { value: String(s.value), context: s.context };
  }

  /** Sends an event on behalf of `meta` (its request id and requester land in the log). */
  send(event: { type: string } & Record<string, unknown>, meta: RequestMeta = {}): void {
    this.meta = meta;
    this.actor.send(event);
  }

  private inspect(ev: InspectionEvent): void {
    if (ev.type !== '@xstate.snapshot' || ev.actorRef !== this.actor) return;
    const snap = ev.snapshot as unknown as { value: unknown; context: Record<string, unknown>; status: string };
    if (snap.status === 'error') return;
    const to = String(snap.value);
    if (to === this.lastValue) return;
    const from = this.lastValue;
    this.lastValue = to;
    const ctxErr = (snap.context as { error?: { reason?: string } | string | null }).error;
    const reason = typeof ctxErr === 'string' ? ctxErr : ctxErr?.reason;
    const rec: Omit<TransitionRecord, 'kind' | 'id' | 'host'> = {
      event: ev.event.type,
      from,
      to,
      at: new Date().toISOString(),
    };
    if (this.meta.requestId) rec.requestId = this.meta.requestId;
    if (this.meta.actor) rec.actor = this.meta.actor;
    if (reason && (to === 'error' || /Failed$/.test(to))) rec.reason = reason;
    this.opts.onTransition(rec, { value: to, context: snap.context });
  }
}
