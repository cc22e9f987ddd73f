import type { Logger } from 'pino';
import { fromPromise } from 'xstate';
import { CyborgError, TransitionInvalidError } from '../../errors/index.js';
import {
  allowedEvents,
  type ArqContext,
  type ArqEvent,
  arqMachine,
  type ArqState,
  ArqStates,
  arqTags,
  type Binding,
  type BoundTo,
  cyborgState,
  NOT_YET,
  recoverInterrupted,
} from '../../machines/index.js';
import type { ArqRecord, Journal, MachineRecord } from '../runtime/index.js';
import { MachineHost } from '../runtime/index.js';
import type { ArqView, EventHub, RequestMeta, TransitionRecord } from '../../model/index.js';

export interface ArqActorOptions {
  input: Pick<ArqContext, 'uuid' | 'deviceProfileName' | 'deviceProfileGroupId' | 'projectId'>;
  record?: ArqRecord;
  createdAt?: string;
  /** The provided machine, shared by every ARQ of a conductor (see `arqLogic`). */
  logic: ArqLogic;
  journal: Journal;
  hub: EventHub;
  log: Logger;
  /** After the ARQ's removal is committed (a delete finished, now or by a later reconciliation). */
  onDeleted?: (uuid: string) => void;
  /** Its creation was not committed (answered 503, refused): it does not exist. */
  onDropped?: (uuid: string) => void;
  /** Its committed view changed (the supervisor indexes ARQs by instance). */
  onView?: (view: ArqView) => void;
}

export type ArqLogic = ReturnType<typeof arqMachine.provide>;

const DEFER = { defer: true } as const;

/** The ARQ machine with `bind` / `unbind` provided; build it once per conductor. */
export function arqLogic(tree: {
  bindArq(uuid: string, binding: Binding): Promise<BoundTo>;
  releaseArq(uuid: string, boundTo: BoundTo | null): Promise<void>;
}): ArqLogic {
  return arqMachine.provide({
    actors: {
      bind: fromPromise<BoundTo, { uuid: string; binding: Binding }>(({ input }) => tree.bindArq(input.uuid, input.binding)),
      unbind: fromPromise<void, { uuid: string; boundTo: BoundTo | null }>(({ input }) => tree.releaseArq(input.uuid, input.boundTo)),
    },
  });
}

/**
 * The ARQ's states in which an effect runs (`BindStarted`, `Unbinding`, `Deleting`): nobody is
 * answered on entering one (a bind is answered `Bound`, a delete `Deleted` or, once the release
 * outlasts the request's wait, `Deleting`, and that wait writes it — see `request`), so their
 * commits are deferred to ride with the one that ends the effect (docs/persistence.md).
 */
const EFFECT_STATES: ReadonlySet<string> = new Set(
  Object.entries(arqMachine.states)
    .filter(([, node]) => node.tags.includes('busy'))
    .map(([name]) => name),
);

const RETRY_BASE_MS = 2_000;
const RETRY_MAX_MS = 60_000;

/**
 * Hosts one accelerator request's machine. Like the accelerator actor, a request resolves with
 * the committed view after the machine settles; a forbidden event is a TransitionInvalidError.
 */
export class ArqActor {
  readonly uuid: string;
  private m!: MachineHost<ArqLogic>;
  private committed: ArqView;
  private commitChain: Promise<void> = Promise.resolve();
  /** Transitions handed to the journal, and the last one shown as committed (a late one never overwrites a newer). */
  private submitted = 0;
  private shown = 0;
  /** The latest commit handed to the journal was deferred: whoever waits for it must ask for it. */
  private deferredTail = false;
  /** What the database holds of it (null: its creation is not committed yet). */
  private committedRecord: ArqRecord | null;
  /** Times memory went back to the committed record (see `revert`). */
  private resets = 0;
  readonly createdAt: string;
  /** Reconciliation's backoff (see `retry`). */
  private failedRetries = 0;
  private nextRetryAt = 0;

  constructor(private readonly opts: ArqActorOptions) {
    this.uuid = opts.input.uuid;
    this.createdAt = opts.createdAt ?? opts.record?.context.createdAt ?? new Date().toISOString();
    this.committedRecord = opts.record ?? null;
    this.m = this.boot(opts.record);
    this.committed = this.show(this.buildView(this.createdAt));
  }

  /**
   * Starts the machine from `record` (fresh without one). Interrupted mid-bind, mid-unbind or
   * mid-delete — a restart, or memory sent back to a committed effect state — the machine's
   * INTERRUPTED says where that leaves it (a delete stays a delete, finished by reconciliation:
   * see `retry`), committed as a RECOVER transition like an accelerator's: the database must not
   * keep the effect's state while the view shows where it leads.
   */
  private boot(from: ArqRecord | undefined): MachineHost<ArqLogic> {
    const recovered = from ? recoverInterrupted(this.opts.logic, from) : undefined;
    const m = new MachineHost({
      machine: this.opts.logic,
      input: this.opts.input,
      record: recovered?.record,
      owner: {
        // A failed commit reaches whoever waits on the change through commitChain; this copy of the
        // outcome has nobody to tell (left unhandled, a database outage would end the process).
        onTransition: (rec, persisted) => {
          this.onTransition(rec, persisted).catch(() => undefined);
        },
        onCrash: (err) => this.opts.log.error({ err, arqUuid: this.uuid }, 'arq machine crashed'),
      },
    });
    m.start();
    if (recovered?.interrupted) {
      this.m = m;
      this.onTransition(
        { event: 'RECOVER', from: recovered.interrupted as ArqState, to: m.value, at: new Date().toISOString(), reason: 'interrupted', actor: 'conductor' },
        m.record(),
      ).catch(() => undefined);
    }
    return m;
  }

  get state(): ArqState {
    return this.m.value;
  }

  view(): ArqView {
    return this.committed;
  }

  allowed(): string[] {
    return allowedEvents(this.m.snapshot, {
      BIND: { type: 'BIND', hostname: 'h', deviceRpUuid: 'r', instanceUuid: 'i' } as ArqEvent,
      UNBIND: { type: 'UNBIND' },
      DELETE: { type: 'DELETE' },
    });
  }

  /** Records creation (no transition yet, but the row and a log line). */
  announceCreated(meta: RequestMeta = {}): Promise<void> {
    return this.onTransition({ event: 'CREATE', from: NOT_YET, to: this.m.value, at: this.createdAt, ...meta }, this.m.record());
  }

  /**
   * Sends `event` and resolves with the committed view once the machine settles — or, with
   * `settleWithinMs`, once that much time has passed: an unbind or delete is durable intent, and
   * its committed first step (`Unbinding`, `Deleting`) is the answer while the release goes on.
   */
  async request(event: ArqEvent, meta: RequestMeta = {}, opts: { settleWithinMs?: number } = {}): Promise<ArqView> {
    if (!this.m.snapshot.can(event)) {
      throw new TransitionInvalidError('arq', this.uuid, event.type, cyborgState(this.m.value), this.allowed());
    }
    this.m.send(event, meta);
    await this.settled(opts.settleWithinMs);
    // A release that outlasted the wait is answered with its committed first step: write it now.
    this.writeDeferred();
    await this.commitChain;
    return this.committed;
  }

  /**
   * Reconciliation: retries the release of an acknowledged delete or unbind that could not finish
   * (`DeletePending`, `UnbindFailed`). False when there is nothing to retry.
   */
  retry(force = false, now = Date.now()): boolean {
    const event: ArqEvent = { type: 'RECONCILE' };
    if (this.m.snapshot.status !== 'active' || !this.m.snapshot.can(event)) {
      this.failedRetries = 0;
      return false;
    }
    // Backs off while nothing changes (each retry writes two transitions); news (an agent back,
    // a host adopted) retries at once.
    if (!force && now < this.nextRetryAt) return false;
    this.nextRetryAt = now + Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** this.failedRetries);
    this.failedRetries = Math.min(this.failedRetries + 1, 16);
    this.m.send(event, { actor: 'conductor:reconcile' });
    return true;
  }

  private settled(withinMs?: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      // Declared first: subscribing to an actor already stopped completes at once, inside subscribe().
      let sub: { unsubscribe(): void } | undefined;
      let over = false;
      const done = (): void => {
        over = true;
        clearTimeout(timer);
        sub?.unsubscribe();
        resolve();
      };
      const check = (): void => {
        const s = this.m.snapshot;
        if (!s.hasTag('busy') || s.status !== 'active') done();
      };
      // `complete`: the machine was replaced (memory went back to the committed record).
      sub = this.m.actor.subscribe({
        next: check,
        complete: done,
        error: (err: unknown) => {
          clearTimeout(timer);
          reject(err);
        },
      });
      if (over) {
        sub.unsubscribe();
        return;
      }
      if (withinMs !== undefined) timer = setTimeout(done, withinMs);
      check();
    });
  }

  /** Resolves once the machine is not busy (a bind or release under way has ended), or after `withinMs`. */
  idle(withinMs: number): Promise<void> {
    return this.settled(withinMs).catch(() => undefined);
  }

  flushed(): Promise<void> {
    this.writeDeferred();
    return this.commitChain;
  }

  /** Someone waits for the latest commit: if it was deferred, a barrier writes it now. */
  private writeDeferred(): void {
    if (!this.deferredTail) return;
    this.deferredTail = false;
    this.opts.journal.commit([]).catch(() => undefined);
  }

  stop(): void {
    this.m.stop();
  }

  private onTransition(rec: Omit<TransitionRecord, 'kind' | 'id' | 'host'>, persisted: MachineRecord<ArqContext>): Promise<void> {
    const full: TransitionRecord = { kind: 'arq', id: this.uuid, ...rec };
    // At debug, as an accelerator's: the audit log and the event stream hold every change.
    if (this.opts.log.isLevelEnabled('debug'))
      this.opts.log.debug({ arqUuid: this.uuid, from: rec.from, to: rec.to, event: rec.event, requestId: rec.requestId }, 'arq transition');
    const deleted = rec.to === ArqStates.Deleted;
    const record: ArqRecord = { value: persisted.value, context: { ...persisted.context, createdAt: this.createdAt } };
    const defer = EFFECT_STATES.has(persisted.value);
    this.deferredTail = defer;
    const commit = this.opts.journal.commit(
      [
        { type: 'arq', uuid: this.uuid, record, deleted },
        { type: 'transition', record: full },
      ],
      defer ? DEFER : undefined,
    );
    // Its outcome is read through the chain below, perhaps only once earlier commits settle.
    commit.catch(() => undefined);
    const seq = ++this.submitted;
    const epoch = this.resets;
    const show = (): void => {
      if (seq <= this.shown) return;
      this.shown = seq;
      this.committedRecord = record;
      this.committed = this.show(this.buildView(rec.at, persisted));
      this.opts.hub.publish(full);
      if (deleted) this.opts.onDeleted?.(this.uuid);
      // Made before memory went back (a later commit was refused): the database holds it now.
      else if (epoch < this.resets) this.resetTo(record);
    };
    const step = this.commitChain
      .catch(() => undefined)
      .then(() => commit)
      .then(show, (err: unknown) => {
        // Not written (503 while the database is away, a refusal, a stop): memory goes back to what
        // is committed — an ARQ whose creation was not committed does not exist.
        this.revert(err);
        throw err;
      });
    this.commitChain = step;
    return step.catch((err: unknown) => {
      throw err instanceof CyborgError
        ? err
        : new CyborgError('persistence.unavailable', 'could not persist the ARQ change', { uuid: this.uuid }, { cause: err });
    });
  }

  private revert(err: unknown): void {
    const committed = this.committedRecord;
    if (!committed) {
      this.opts.onDropped?.(this.uuid);
      return;
    }
    // A committed effect state comes back as its INTERRUPTED outcome (see `boot`): already there
    // after an earlier revert, whose RECOVER may itself have been refused.
    const now = this.m.record();
    if (now.value === recoverInterrupted(this.opts.logic, committed).record.value) return;
    this.opts.log.warn(
      { arqUuid: this.uuid, state: now.value, committed: committed.value, err: (err as Error | undefined)?.message },
      'ARQ change not committed: back to the committed state',
    );
    this.resetTo(committed);
  }

  /** Memory takes `record`: a new machine from it; whoever waited on the old one is answered. */
  private resetTo(record: ArqRecord): void {
    this.resets++;
    this.deferredTail = false;
    const old = this.m;
    this.m = this.boot(record);
    old.stop();
  }

  /**
   * A change answered 503 that the database had taken after all (its flush had committed when
   * the connection broke): memory and the view take it.
   */
  landed(record: ArqRecord, deleted: boolean): void {
    this.committedRecord = record;
    if (deleted) {
      this.opts.onDeleted?.(this.uuid);
      return;
    }
    this.resetTo(record);
    this.committed = this.show(this.buildView(new Date().toISOString(), record));
  }

  /** A new committed view, told to whoever indexes ARQs. */
  private show(view: ArqView): ArqView {
    this.opts.onView?.(view);
    return view;
  }

  private buildView(at: string, persisted: MachineRecord<ArqContext> = this.m.record()): ArqView {
    const ctx = persisted.context;
    const state = persisted.value as ArqState;
    return {
      uuid: ctx.uuid,
      deviceProfileName: ctx.deviceProfileName,
      deviceProfileGroupId: ctx.deviceProfileGroupId,
      projectId: ctx.projectId,
      binding: ctx.binding,
      boundTo: ctx.boundTo,
      error: ctx.error,
      state,
      tags: arqTags(state),
      cyborgState: cyborgState(state),
      allowed: this.m.value === persisted.value ? this.allowed() : [],
      createdAt: this.createdAt,
      updatedAt: at,
    };
  }
}
