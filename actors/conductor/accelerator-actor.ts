import { CyborgError, TransitionInvalidError } from '../../errors/index.js';
import {
  NOT_YET,
  OPERATOR_EVENTS,
  recoverInterrupted,
  type AcceleratorContext,
  type AcceleratorState,
  type AcceleratorEvent,
  type AcceleratorInput,
  type HealthSignal,
} from '../../machines/index.js';
import { whyRefused, type AcceleratorView, type DeployableT, type RequestMeta, type TransitionRecord } from '../../model/index.js';
import { MachineHost, type AcceleratorRecord, type MachineOwner, type Restable, type StepSnapshot } from '../runtime/index.js';
import { stamped, startingRecordOf, tagsOf, type AcceleratorLogic } from './accelerator-logic.js';
import type { AcceleratorActorOptions, AcceleratorRuntime } from './accelerator-runtime.js';
import { acceleratorViewOf, allowedOf, specFieldsOf, type AcceleratorSpec } from './accelerator-view.js';
import { conditionNote, conditionTransition, recoveryOnTheWay, warnCondition, warnIfDrained } from './condition.js';
import { SettleWaiters } from './settle-waiters.js';

const SETTLED: Promise<void> = Promise.resolve();
const DEFER = { defer: true } as const;
/** The outcome of an operation the database holds the start of: written whenever it can be (see `outcomeOfCommittedOp`). */
const OUTCOME = { untilWritten: true } as const;
const DEFER_OUTCOME = { defer: true, untilWritten: true } as const;

const OPERATOR = new Set<string>(OPERATOR_EVENTS);

/**
 * Hosts one accelerator's machine. Transitions are serialized by the machine's own mailbox;
 * `request` checks and sends in one synchronous step, so of two racing requests exactly one is
 * accepted and the other gets TransitionInvalidError (HTTP 409) with the state and allowed events.
 * A request resolves once the machine has settled and every change it made is committed.
 */
export class AcceleratorActor implements MachineOwner<AcceleratorContext>, Restable {
  readonly id: string;
  private readonly rt: AcceleratorRuntime<AcceleratorActor>;
  private spec: AcceleratorSpec;
  private fields: ReturnType<typeof specFieldsOf>;
  /** The live machine, while awake (see Passivation); null at rest. */
  private m: MachineHost<AcceleratorLogic> | null = null;
  /** The machine's record while at rest (when awake, the live machine's is the truth). */
  private current: AcceleratorRecord;
  private lastUsed = 0;
  // Only the committed record is kept; views are built when asked (a 25-field view per actor
  // would be ~0.5 KB more of each of 100,000 actors).
  private committedRecord: AcceleratorRecord;
  private generation = 0;
  /** Transitions handed to the journal, and the last one whose commit is shown (see onTransition). */
  private submitted = 0;
  private applied = 0;
  private updatedAt: string;
  private commitChain: Promise<void> = SETTLED;
  /** Requests under way for an actor that acknowledges later (`awaitCommit: false`): their commits are deferred. */
  private deferring = 0;
  /** The latest commit handed to the journal was deferred: whoever waits for it must ask for it. */
  private deferredTail = false;
  /** Times memory went back to the committed record (see `revert`): a commit made before one is judged by it. */
  private resets = 0;
  /** The context of the last transition handed to the journal: what a change of state is compared with. */
  private lastContext: AcceleratorContext;
  private crashed: unknown = null;
  private waiters: SettleWaiters | null = null;
  /** Its driver no longer reports it (the host actor sets it; see HostActor's report). */
  missing = false;
  /** Built from a record the database holds. */
  private readonly fromRecord: boolean;
  /** Why its driver could not observe it in the last report (its record is the last observed one); null when observed. */
  unobserved: { reason: string; since: number } | null = null;
  /**
   * A serial read once that is not the recorded one (actors/conductor/identity.ts): a second
   * report with it confirms another card, one with the recorded serial again shows a flaky tool.
   * Memory only: a conductor restarted meanwhile asks for the confirmation again.
   */
  identityDoubt: { serial: string; held: boolean } | null = null;

  constructor(opts: AcceleratorActorOptions<AcceleratorActor>) {
    this.rt = opts.runtime;
    this.spec = opts.spec;
    this.fromRecord = opts.record !== undefined;
    this.id = opts.spec.deployable.uuid;
    this.fields = specFieldsOf(this.spec);
    const { record, recovery } = startingRecordOf(this.rt.logic, opts.record, this.input());
    // Born at rest: the machine starts only when the first event comes.
    this.current = record;
    this.committedRecord = this.current;
    this.lastContext = record.context;
    this.updatedAt = new Date().toISOString();
    // A record saved in a transient state is committed as a RECOVER transition, not only held in
    // memory while the database says `attaching`.
    if (recovery) this.onTransition(recovery, this.current);
  }

  /** What a fresh record of the machine is made from. */
  private input(): AcceleratorInput {
    const identity = this.spec.device.identity;
    return { id: this.id, host: this.spec.host, capacity: Math.max(1, this.spec.deployable.attachHandles.length), ...(identity ? { identity } : {}) };
  }

  /** The machine, started from the record if it was at rest. */
  private live(): MachineHost<AcceleratorLogic> {
    this.lastUsed = Date.now();
    if (!this.m) {
      this.m = new MachineHost({ machine: this.rt.logic, record: this.current, owner: this }).start();
      this.rt.passivation.wake(this);
    }
    return this.m;
  }

  /** The record of the machine now, awake or at rest. */
  private record(): AcceleratorRecord {
    return this.m ? this.m.record() : this.current;
  }

  /** Restable: stops the live machine if it is idle, settled and has been unused since `idleSince`. */
  rest(idleSince: number): boolean {
    const m = this.m;
    if (!m) return true;
    if (this.lastUsed > idleSince || this.crashed || (this.waiters && this.waiters.size > 0)) return false;
    const snap = m.snapshot;
    if (snap.status !== 'active' || snap.hasTag('busy')) return false;
    this.current = m.persisted();
    this.m = null;
    m.stop();
    return true;
  }

  /** Records the accelerator's first appearance (discovery) in the log, with what its card says about itself. */
  announceDiscovered(meta: RequestMeta = {}, args?: Record<string, string>): Promise<void> {
    const r = this.record();
    return this.onTransition({ event: 'DISCOVERED', from: NOT_YET, to: this.state, at: new Date().toISOString(), ...meta, ...(args ? { args } : {}) }, r);
  }

  /**
   * An audit row of something seen that moves no state (a card whose serial reads otherwise),
   * committed with the record as it is: the log says what the conductor saw and did not act on.
   */
  note(event: string, args: Record<string, string>, meta: RequestMeta, reason?: string): Promise<void> {
    const r = this.record();
    const rec = { event, from: this.state, to: this.state, at: new Date().toISOString(), ...meta, args, ...(reason ? { reason } : {}) };
    return this.onTransition(rec, r);
  }

  get state(): AcceleratorState {
    // A record holds one of the machine's own state names (the journal types it as a string).
    return this.m ? this.m.value : (this.current.value as AcceleratorState);
  }

  get host(): string {
    return this.spec.host;
  }

  /** Its Placement resource provider: uuid3(DNS, deployable name), as Cyborg names it. */
  get rpUuid(): string {
    return this.fields.rpUuid;
  }

  get deployable(): DeployableT {
    return this.spec.deployable;
  }

  get context(): AcceleratorContext {
    return this.m ? this.m.snapshot.context : this.current.context;
  }

  /** Whether any record of it is in the database (rebuilt from one, or a commit of it shown). */
  get everCommitted(): boolean {
    return this.fromRecord || this.applied > 0;
  }

  /** The last persisted record: what a supervisor restarts this actor from. */
  get lastCommitted(): AcceleratorRecord {
    return this.committedRecord;
  }

  view(): AcceleratorView {
    return this.buildView();
  }

  /** Operator events accepted now (memoized by state facts: see `allowedOf`). */
  allowed(): string[] {
    return allowedOf(this.rt.logic, this.record(), this.freeHandle());
  }

  /** The first attach handle nobody holds, in discovery order (Cyborg takes the first free row). */
  freeHandle(): string | undefined {
    const used = new Set(this.context.allocations.map((a) => a.handleUuid));
    return this.spec.deployable.attachHandles.find((h) => !used.has(h.uuid))?.uuid;
  }

  /**
   * Sends an operator event and resolves with the committed view once the machine has settled.
   * Throws TransitionInvalidError when the machine does not accept the event now.
   *
   * `awaitCommit: false` is for an actor that will itself commit and acknowledge later (an ARQ
   * binding): the journal commits in order, so that later commit covers this one, and waiting
   * here would only add a flush round trip to every bind.
   *
   * `settleWithinMs`: a driver operation that has not ended by then is answered as it stands, in
   * its committed `…ing` state (the operator's write: the api's 202 and Location).
   */
  async request(event: AcceleratorEvent, meta: RequestMeta = {}, opts: { awaitCommit?: boolean; settleWithinMs?: number } = {}): Promise<AcceleratorView> {
    if (this.crashed) throw new CyborgError('service.shutting_down', `accelerator ${this.id} is restarting`, { id: this.id });
    const m = this.live();
    // Only operator events: a driver's outcome (OP_DONE …) comes from the effect, never a caller.
    if (!OPERATOR.has(event.type) || !m.snapshot.can(event)) {
      // The cause and the way out, read from the committed view (a refusal names what to do).
      throw new TransitionInvalidError('accelerator', this.id, event.type, m.value, this.allowed(), whyRefused(this.buildView(), event.type));
    }
    if (opts.awaitCommit === false) {
      // The ARQ's commit that answers Nova takes these transitions along (one transaction).
      this.deferring++;
      try {
        this.sendNoting(m, stamped(event), meta);
        await this.settled();
      } finally {
        this.deferring--;
      }
      return this.buildView(this.record());
    }
    this.sendNoting(m, stamped(event), meta);
    if (opts.settleWithinMs === undefined) await this.settled();
    else if (!(await this.settledWithin(opts.settleWithinMs))) {
      // Still under way: answered with what is committed — the operation under way (the api's
      // 202 and Location) — rather than after its caller stopped waiting, when the api could
      // only answer "unavailable" for an operation that goes on and lands.
      await this.flushed();
      return this.buildView();
    }
    await this.commitChain;
    return this.buildView();
  }

  /** Whether the machine settles (its driver operation ends) within `ms`; rejects as `settled` does. */
  private settledWithin(ms: number): Promise<boolean> {
    if (!this.busy) return this.settled().then(() => true);
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([
      this.settled().then(() => true),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), ms);
      }),
    ]).finally(() => clearTimeout(timer));
  }

  /** Sends a system event (host lost/back, removal by discovery): no waiting, ignored if not accepted. */
  system(event: AcceleratorEvent, meta: RequestMeta = { actor: 'conductor' }): boolean {
    if (this.crashed) return false;
    const m = this.live();
    if (!m.snapshot.can(event)) return false;
    this.sendNoting(m, event, meta);
    return true;
  }

  /**
   * One health check of this accelerator (from its agent). A healthy answer for a healthy device
   * — nearly every answer in a fleet — wakes nothing and changes nothing.
   */
  healthCheck(signal: HealthSignal, meta: RequestMeta): void {
    if (signal.ok && !this.context.health) return;
    this.system({ type: 'HEALTH', ...signal }, meta);
  }

  /**
   * Sends `event`; a change of health or maintenance that leaves the state where it was (the
   * machine host records only changes of state) is committed and published here.
   */
  private sendNoting(m: MachineHost<AcceleratorLogic>, event: AcceleratorEvent, meta: RequestMeta): void {
    const before = m.record();
    m.send(event, meta);
    const note = conditionNote(before, m.record(), event.type);
    if (!note) return;
    if (note.change.warn) warnCondition(this.rt.log, this.id, this.spec, note, meta.requestId);
    this.onTransition(conditionTransition(note, m.value, meta), m.persisted());
  }

  /** Whether a driver operation is under way (the machine is in a busy state). */
  get busy(): boolean {
    return this.m?.snapshot.hasTag('busy') === true;
  }

  /** Resolves once the machine is not busy (its driver operation has ended or failed), or after `withinMs`. */
  idle(withinMs: number): Promise<void> {
    if (!this.busy) return SETTLED;
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, withinMs);
      void this.settled()
        .catch(() => undefined)
        .finally(() => {
          clearTimeout(timer);
          resolve();
        });
    });
  }

  /** Resolves when every change made so far is committed (writing a deferred one now). */
  flushed(): Promise<void> {
    if (this.deferredTail) {
      this.deferredTail = false;
      this.rt.journal.commit([]).catch(() => undefined);
    }
    return this.commitChain;
  }

  updateSpec(spec: AcceleratorSpec): void {
    this.spec = spec;
    this.fields = specFieldsOf(this.spec);
  }

  /** Marks it not observed (the reason in the tool's words) or observed again (null). */
  setUnobserved(reason: string | null): void {
    if (reason === null) this.unobserved = null;
    else if (this.unobserved?.reason !== reason) this.unobserved = { reason, since: this.unobserved?.since ?? Date.now() };
  }

  stop(): void {
    this.rt.passivation.forget(this);
    this.m?.stop();
    this.m = null;
    this.wake(new CyborgError('service.shutting_down', `accelerator ${this.id} stopped`));
  }

  /** Resolves once the machine is not busy (rejects if it crashed or stopped). */
  private settled(): Promise<void> {
    if (this.crashed) return Promise.reject(this.crashed);
    if (!this.m?.snapshot.hasTag('busy')) return SETTLED;
    return (this.waiters ??= new SettleWaiters()).wait();
  }

  private wake(err?: unknown, snap: StepSnapshot | undefined = this.m?.snapshot): void {
    this.waiters?.wake(err ?? this.crashed, snap);
  }

  /** MachineOwner: the machine took a step (the actor holds `snap` once the step is done). */
  onStep(snap: StepSnapshot): void {
    this.wake(undefined, snap);
  }

  /** MachineOwner: the state changed. Hands the change to the journal. */
  onTransition(rec: Omit<TransitionRecord, 'kind' | 'id' | 'host'>, persisted: AcceleratorRecord): Promise<void> {
    const healed = recoveryOnTheWay(this.lastContext, persisted.context, rec.from, rec.to, rec.event);
    this.lastContext = persisted.context;
    if (healed) warnCondition(this.rt.log, this.id, this.spec, healed, rec.requestId);
    const args = healed ? { ...rec.args, ...healed.change.args } : rec.args;
    const full: TransitionRecord = { kind: 'accelerator', id: this.id, host: this.spec.host, ...rec, ...(args ? { args } : {}) };
    // At debug: every change is in the audit log and the event stream already; a line per
    // transition at info was most of the hot path's log writes (docs/persistence.md, "One cycle").
    if (this.rt.log.isLevelEnabled('debug')) {
      this.rt.log.debug({ acceleratorId: this.id, host: this.spec.host, from: rec.from, to: rec.to, event: rec.event, requestId: rec.requestId }, 'transition');
    }
    warnIfDrained(this.rt.log, this.id, this.spec, rec.from, persisted, rec.requestId);
    // Submitted at once (the journal keeps order); the view moves only after the commit. Entering
    // a busy state (`installing`, `programming`) answers nobody: it rides with the commit that
    // ends the operation, so a request is one transaction — all of it written, or (a 503) none —
    // unless the operation outlasts the journal's `deferMaxMs` and the step is written alone.
    this.deferredTail = this.deferring > 0 || tagsOf(this.rt.logic, persisted.value).includes('busy');
    const commit = this.rt.journal.commit(
      [
        { type: 'accelerator', id: this.id, host: this.spec.host, record: persisted },
        { type: 'transition', record: full },
      ],
      this.outcomeOfCommittedOp(persisted) ? (this.deferredTail ? DEFER_OUTCOME : OUTCOME) : this.deferredTail ? DEFER : undefined,
    );
    const seq = ++this.submitted;
    const epoch = this.resets;
    // No chain through the previous step: the journal answers commits in the order they were
    // made, so this one settles after every earlier one. A chain of three promises and closures
    // per transition lived as long as the commit, long enough under load to be promoted to the
    // old generation (bench:persistence's sampling heap profile: a fifth of what major GCs took).
    const step = commit.then(
      () => this.show(seq, persisted, full, epoch),
      (err: unknown) => {
        // Not written (503 while the database is away, a refusal, a stop): memory goes back to
        // what is committed, so that memory and database agree after every refusal.
        this.revert(err);
        throw err;
      },
    );
    // Handled here: a system transition has nobody awaiting it (a refusal is logged by the journal).
    step.catch(() => undefined);
    this.commitChain = step;
    return step;
  }

  /**
   * Whether `next` ends a driver operation whose first step the database already holds (a disable
   * that outlasted `deferMaxMs`: `uninstalling` written alone, every earlier commit acknowledged).
   * Its commit is written whenever the database answers, never dropped for an outage: the driver
   * has done the work, and going back to the committed step would park the card in `error`
   * (interrupted) until someone retried (issue 39, "a stuck error after an outage"). Meanwhile the
   * API shows the committed step, busy, as while the operation ran.
   */
  private outcomeOfCommittedOp(next: AcceleratorRecord): boolean {
    if (this.applied !== this.submitted) return false;
    const tags = (r: AcceleratorRecord): readonly string[] => tagsOf(this.rt.logic, r.value);
    return tags(this.committedRecord).includes('transient') && !tags(next).includes('transient');
  }

  /**
   * Shows the `seq`th transition as committed, unless a later one already is. One made before
   * memory was reverted (`epoch`) is what the database now holds, later than what memory went
   * back to: memory takes it too.
   */
  private show(seq: number, persisted: AcceleratorRecord, full: TransitionRecord, epoch = this.resets): void {
    if (seq <= this.applied) return;
    this.applied = seq;
    this.committedRecord = persisted;
    this.generation++;
    this.updatedAt = full.at;
    this.rt.hub.publish(full);
    if (epoch < this.resets) this.takeCommitted(persisted);
  }

  /**
   * Memory takes a record the database turned out to hold after memory had gone back from it (a
   * flush whose answer was lost, found committed). One in a transient state (`detaching`) comes
   * back as a restart brings it back, its RECOVER committed: taken as it is, it would be busy
   * with no driver operation running, refusing every event for good.
   */
  private takeCommitted(record: AcceleratorRecord): void {
    const { record: target, recovery } = startingRecordOf(this.rt.logic, record, this.input());
    this.resetTo(target);
    if (recovery) this.onTransition(recovery, target).catch(() => undefined);
  }

  /**
   * A commit of this accelerator was not made: the machine goes back to its committed record
   * (an enable answered 503 leaves the card `inactive`, as the database has it). Waiters are
   * told; a driver operation under way is dropped with the machine (its answer finds it stopped).
   */
  private revert(err: unknown): void {
    const now = this.record();
    // A committed transient state (`programming`, its `ready` refused) comes back as its
    // INTERRUPTED outcome, as after a restart: no driver operation runs for it any more.
    const { record: target } = recoverInterrupted(this.rt.logic, this.committedRecord);
    if (now.value === target.value && now.context === target.context) return;
    this.rt.log.warn(
      { acceleratorId: this.id, host: this.spec.host, state: now.value, committed: this.committedRecord.value },
      'change not committed: back to the committed state',
    );
    this.resetTo(target, err);
  }

  /** Memory takes `record` (the committed one): the live machine, if any, is stopped. */
  private resetTo(
    record: AcceleratorRecord,
    err: unknown = new CyborgError('persistence.unavailable', `accelerator ${this.id} went back to its committed state`),
  ): void {
    this.resets++;
    this.deferredTail = false;
    const m = this.m;
    this.m = null;
    this.current = record;
    this.lastContext = record.context;
    m?.stop();
    this.wake(err);
  }

  /**
   * A change answered 503 that the database had taken after all (the journal found its flush
   * committed when the database came back): it is the committed record now, shown and live.
   */
  landed(record: AcceleratorRecord): void {
    this.committedRecord = record;
    this.generation++;
    this.updatedAt = new Date().toISOString();
    this.takeCommitted(record);
  }

  /** MachineOwner: the machine crashed. */
  onCrash(err: unknown): void {
    // untyped: the crash as XState reported it, kept for the supervisor's log; it never leaves the process.
    this.crashed = err ?? new Error('crashed');
    this.wake(this.crashed);
    this.rt.onCrash(this, err);
  }

  /**
   * The view of the committed record — or, for an internal caller that acknowledges nothing
   * itself (`awaitCommit: false`), of the live one.
   */
  private buildView(r: AcceleratorRecord = this.committedRecord): AcceleratorView {
    const live = this.record();
    const settled = live.value === r.value && live.context === r.context;
    const { id, fields, unobserved, missing, generation, updatedAt } = this;
    return acceleratorViewOf(this.rt.logic, r, { id, host: this.spec.host, fields, unobserved, missing, generation, updatedAt }, settled ? this.allowed() : []);
  }
}
