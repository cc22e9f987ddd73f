import type { AnyStateMachine } from 'xstate';

/**
 * Runs a *flat* XState machine — one level of atomic states under the root, with `on`, `always`,
 * `entry`, `exit`, tags, guards, `assign` and custom actions — without an XState actor. The
 * machine stays an XState definition (its tests, the visualizer, `machine.provide()`); this only
 * replaces the interpreter for the one machine a conductor runs 100,000 of.
 *
 * Why: bench:persistence's heap profile put ~57% of the ~24 KB allocated per transition inside
 * XState's interpreter — a whole snapshot cloned per `assign`, several `Set`s built per microstep
 * — and a live `Actor` with its own system, mailbox and ~20 closures is ~3 KB of each awake
 * accelerator's ~9 KB. The garbage is what fills the old generation, and each mark-compact
 * stalls acknowledgements (docs/persistence.md). Here a step allocates the contexts its `assign`s
 * make and nothing else, and an actor is the few fields of its host.
 *
 * Compiling refuses what it does not run (nested or parallel states, invoke, delays, wildcard
 * events, other built-in actions and guards) instead of running it wrongly; the accelerator
 * machine's behaviour is checked against XState's own interpreter event by event
 * (flat-machine.test.ts).
 */

export type FlatEvent = { type: string } & Record<string, unknown>;

/** What an action's implementation may use of the actor running it. */
export interface FlatSelf {
  send(event: FlatEvent): void;
  getSnapshot(): { status: string };
}

/** The mutable part of one running machine: its state and context (owned by its host). */
export interface FlatRun {
  node: FlatState;
  context: Record<string, unknown>;
  readonly self: FlatSelf;
}

type Guard = (context: Record<string, unknown>, event: FlatEvent) => boolean;

interface Action {
  /** Returns the next context for an `assign`, undefined for an effect. */
  run(context: Record<string, unknown>, event: FlatEvent, self: FlatSelf): Record<string, unknown> | undefined;
}

interface Transition {
  guard: Guard | null;
  /** For an event transition: the name XState's error message gives a guard that throws. */
  guardName: string | undefined;
  target: FlatState | null;
  actions: Action[];
}

export interface FlatState {
  readonly key: string;
  readonly id: string;
  readonly tags: readonly string[];
  readonly tagSet: ReadonlySet<string>;
  entry: Action[];
  exit: Action[];
  on: Map<string, Transition[]>;
  always: Transition[] | null;
}

type Definition = string | { type: string; params?: unknown } | ((...args: unknown[]) => unknown);
type Builtin = { type?: string; assignment?: unknown; resolve?: unknown; check?: unknown };

const COMPILED = new WeakMap<AnyStateMachine, FlatMachine>();

/** Thrown when a machine uses what the flat interpreter does not run. */
export class UnsupportedMachineError extends Error {
  constructor(machineId: string, what: string) {
    super(`machine '${machineId}' cannot run on the flat interpreter: ${what}`);
    this.name = 'UnsupportedMachineError';
  }
}

export class FlatMachine {
  readonly id: string;
  private readonly states = new Map<string, FlatState>();

  /** The compiled form of `machine`, built once per machine object (each `provide()` is one). */
  static of(machine: AnyStateMachine): FlatMachine {
    let flat = COMPILED.get(machine);
    if (!flat) COMPILED.set(machine, (flat = new FlatMachine(machine)));
    return flat;
  }

  private constructor(private readonly machine: AnyStateMachine) {
    this.id = machine.id;
    const root = machine.root;
    if (root.transitions.size > 0 || root.always || root.entry.length > 0 || root.exit.length > 0 || root.invoke.length > 0) {
      this.refuse('transitions, actions or invocations on the root');
    }
    for (const node of Object.values(root.states)) {
      if (node.type !== 'atomic') this.refuse(`state '${node.key}' is ${node.type}`);
      if (node.invoke.length > 0 || node.after.length > 0) this.refuse(`state '${node.key}' invokes or delays`);
      const tags = [...node.tags] as string[];
      this.states.set(node.key, { key: node.key, id: node.id, tags, tagSet: new Set(tags), entry: [], exit: [], on: new Map(), always: null });
    }
    // Second pass: transitions may target any state.
    for (const node of Object.values(root.states)) {
      const s = this.states.get(node.key)!;
      s.entry = node.entry.map((a) => this.action(a as Definition));
      s.exit = node.exit.map((a) => this.action(a as Definition));
      for (const [descriptor, ts] of node.transitions) {
        if (descriptor === '*' || descriptor.endsWith('.*')) this.refuse(`wildcard event '${descriptor}'`);
        s.on.set(descriptor, ts.map((t) => this.transition(s, t)));
      }
      if (node.always) {
        s.always = node.always.map((t) => this.transition(s, t));
        if (s.always.some((t) => !t.target)) this.refuse(`a targetless eventless transition in '${node.key}'`);
      }
    }
  }

  /** The state named `value` (a record's), or an error if the machine has none. */
  state(value: string): FlatState {
    const s = this.states.get(value);
    if (!s) throw new Error(`machine '${this.id}' has no state '${value}'`);
    return s;
  }

  /**
   * One macrostep, as XState's: the event's first enabled transition (if any), then eventless
   * transitions until none is enabled. Updates `run` in place; throws what a guard or action
   * threw (the caller's actor has crashed).
   */
  step(run: FlatRun, event: FlatEvent): void {
    const t = this.select(run, event);
    if (t) this.take(run, t, event);
    for (let n = 0; run.node.always; n++) {
      if (n > 100) throw new Error(`machine '${this.id}' took over 100 eventless transitions in a row`);
      let next: Transition | undefined;
      for (const a of run.node.always) {
        if (!a.guard || a.guard(run.context, event)) {
          next = a;
          break;
        }
      }
      if (!next) break;
      this.take(run, next, event);
    }
  }

  /** Whether `event` would do anything now (XState's `snapshot.can`). */
  can(run: Pick<FlatRun, 'node' | 'context'>, event: FlatEvent): boolean {
    const t = this.select(run, event);
    return t !== undefined && (t.target !== null || t.actions.length > 0);
  }

  private select(run: Pick<FlatRun, 'node' | 'context'>, event: FlatEvent): Transition | undefined {
    const candidates = run.node.on.get(event.type);
    if (!candidates) return undefined;
    for (const t of candidates) {
      if (!t.guard) return t;
      let passed: boolean;
      try {
        passed = t.guard(run.context, event);
      } catch (err) {
        // Worded as XState words it: logs and tests read the same whichever interpreter ran.
        const name = t.guardName ? `'${t.guardName}' ` : '';
        throw new Error(`Unable to evaluate guard ${name}in transition for event '${event.type}' in state node '${run.node.id}':\n${(err as Error).message}`);
      }
      if (passed) return t;
    }
    return undefined;
  }

  /** Exit actions, the transition's actions, entry actions: each sees the context the ones before made. */
  private take(run: FlatRun, t: Transition, event: FlatEvent): void {
    if (t.target) this.apply(run, run.node.exit, event);
    this.apply(run, t.actions, event);
    if (t.target) {
      run.node = t.target;
      this.apply(run, t.target.entry, event);
    }
  }

  private apply(run: FlatRun, actions: Action[], event: FlatEvent): void {
    for (const a of actions) {
      const next = a.run(run.context, event, run.self);
      if (next) run.context = next;
    }
  }

  private transition(source: FlatState, t: { guard?: unknown; target?: readonly { key: string; parent?: unknown }[]; actions: readonly unknown[]; reenter?: boolean }): Transition {
    let target: FlatState | null = null;
    if (t.target && t.target.length > 0) {
      if (t.target.length > 1 || t.target[0]!.parent !== this.machine.root) this.refuse(`a transition from '${source.key}' to more than one or a nested state`);
      target = this.states.get(t.target[0]!.key)!;
      if (target === source) this.refuse(`a self-transition in '${source.key}'`);
    }
    const g = t.guard as Definition | undefined;
    return {
      guard: g === undefined ? null : this.guard(g),
      guardName: typeof g === 'string' ? g : typeof g === 'object' ? g.type : undefined,
      target,
      actions: t.actions.map((a) => this.action(a as Definition)),
    };
  }

  private guard(def: Definition): Guard {
    if (typeof def === 'function') return (context, event) => Boolean(def({ context, event }, undefined));
    const type = typeof def === 'string' ? def : def.type;
    const impl = this.machine.implementations.guards[type] as unknown;
    if (typeof impl !== 'function' || 'check' in impl) this.refuse(`guard '${type}' is ${impl ? 'a built-in (and, or, not, stateIn)' : 'not implemented'}`);
    const fn = impl as (args: unknown, params: unknown) => boolean;
    if (typeof def === 'string' || !('params' in def)) return (context, event) => fn({ context, event }, undefined);
    const params = def.params;
    if (typeof params === 'function') return (context, event) => fn({ context, event }, params({ context, event }));
    return (context, event) => fn({ context, event }, params);
  }

  private action(def: Definition): Action {
    const inline = typeof def === 'function';
    const type = inline ? undefined : typeof def === 'string' ? def : def.type;
    const impl = (inline ? def : this.machine.implementations.actions[type!]) as (((args: unknown, params: unknown) => unknown) & Builtin) | undefined;
    // XState runs an action it has no implementation for as nothing.
    if (!impl) return { run: () => undefined };
    const params = inline || typeof def === 'string' || !('params' in def) ? undefined : def.params;
    const paramsOf = typeof params === 'function'
      ? (context: unknown, event: unknown) => (params as (a: unknown) => unknown)({ context, event })
      : () => params;
    if (impl.type === 'xstate.assign') {
      const assignment = impl.assignment as ((args: unknown, params: unknown) => Record<string, unknown>) | Record<string, unknown>;
      return {
        run: (context, event, self) => {
          const args = { context, event, self };
          const p = paramsOf(context, event);
          let partial: Record<string, unknown>;
          if (typeof assignment === 'function') partial = assignment(args, p);
          else {
            partial = {};
            for (const key of Object.keys(assignment)) {
              const v = assignment[key];
              partial[key] = typeof v === 'function' ? (v as (a: unknown, p: unknown) => unknown)(args, p) : v;
            }
          }
          return Object.assign({}, context, partial);
        },
      };
    }
    if ('resolve' in impl) this.refuse(`built-in action '${impl.type ?? type}'`);
    return {
      run: (context, event, self) => {
        impl({ context, event, self }, paramsOf(context, event));
        return undefined;
      },
    };
  }

  private refuse(what: string): never {
    throw new UnsupportedMachineError(this.id, what);
  }
}
