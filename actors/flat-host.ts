import type { MachineRecord } from './journal.js';
import type { FlatMachine, FlatEvent, FlatRun, FlatSelf, FlatState } from './flat-machine.js';
import { changeOf, NO_META, type MachineOwner, type RequestMeta } from './machine-host.js';

/**
 * MachineHost's counterpart for a flat machine run by FlatMachine: one object is the running
 * machine, its snapshot (`value`, `context`, `status`, `hasTag`, `can`) and the `self` its
 * effects answer to — for the accelerator, of which a conductor runs 100,000 (see
 * flat-machine.ts for why not an XState actor).
 *
 * Like an XState actor it processes one event at a time (one sent meanwhile, by an action, waits
 * its turn), ignores events once stopped or crashed, and on a throwing guard or action keeps the
 * snapshot it had before that event and reports the crash to its owner.
 */
export class FlatHost implements FlatRun, FlatSelf {
  node: FlatState;
  context: Record<string, unknown>;
  status: 'active' | 'stopped' | 'error' = 'active';
  private lastValue: string;
  private meta: RequestMeta = NO_META;
  private processing = false;
  private queue: FlatEvent[] | null = null;

  constructor(private readonly machine: FlatMachine, record: MachineRecord, private readonly owner: MachineOwner) {
    this.node = machine.state(record.value);
    this.context = record.context;
    this.lastValue = record.value;
  }

  get self(): this {
    return this;
  }

  /** The snapshot face: this object, read at once (the next event changes it). */
  get snapshot(): this {
    return this;
  }

  getSnapshot(): this {
    return this;
  }

  get value(): string {
    return this.node.key;
  }

  get tags(): readonly string[] {
    return this.node.tags;
  }

  hasTag(tag: string): boolean {
    return this.node.tagSet.has(tag);
  }

  can(event: FlatEvent): boolean {
    return this.machine.can(this, event);
  }

  record(): MachineRecord {
    // Never mutated: every assign makes a new context, so the record can share it.
    return { value: this.node.key, context: this.context };
  }

  /**
   * Sends an event on behalf of `meta` (its request id and requester land in the log). Without
   * `meta` — an effect answering — the change is the current requester's.
   */
  send(event: FlatEvent, meta?: RequestMeta): void {
    if (this.status !== 'active') return;
    if (meta) this.meta = meta;
    if (this.processing) {
      (this.queue ??= []).push(event);
      return;
    }
    this.processing = true;
    try {
      this.process(event);
      for (let next = this.queue?.shift(); next && this.status === 'active'; next = this.queue?.shift()) this.process(next);
    } finally {
      this.processing = false;
      this.queue = null;
    }
  }

  stop(): void {
    if (this.status === 'active') this.status = 'stopped';
  }

  private process(event: FlatEvent): void {
    const node = this.node;
    const context = this.context;
    try {
      this.machine.step(this, event);
    } catch (err) {
      this.node = node;
      this.context = context;
      this.status = 'error';
      this.owner.onCrash(err);
      return;
    }
    const to = this.node.key;
    if (to !== this.lastValue) {
      const from = this.lastValue;
      this.lastValue = to;
      this.owner.onTransition(changeOf(from, to, this.context, event, this.meta), { value: to, context: this.context });
    }
    this.owner.onStep?.(this);
  }
}
