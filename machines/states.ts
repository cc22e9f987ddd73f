/**
 * The lifecycle's words: every state of each machine, as views, the journal and the page name
 * them. Code outside `machines/` compares with these (`AcceleratorStates.removed`), never with a
 * string of its own, so a state renamed or removed here fails the type check everywhere it is
 * used. No XState here: the browser bundle takes this file alone. Each list is checked against
 * its machine's config in vocabulary.test.ts.
 */

/** The names of a machine's states as an object whose keys are its values. */
export function namesOf<const T extends string>(names: readonly T[]): { readonly [K in T]: K } {
  return Object.freeze(Object.fromEntries(names.map((n) => [n, n]))) as { readonly [K in T]: K };
}

export const ACCELERATOR_STATES = [
  'inactive',
  'installing',
  'ready',
  'programming',
  'programmed',
  'attaching',
  'settleAfterFailedAttach',
  'attached',
  'detaching',
  'settleAfterDetach',
  'resetting',
  'settleAfterReset',
  'uninstalling',
  'error',
  'offline',
  'removed',
] as const;
export type AcceleratorState = (typeof ACCELERATOR_STATES)[number];
export const AcceleratorStates = namesOf(ACCELERATOR_STATES);

export const ARQ_STATES = [
  'Initial',
  'BindStarted',
  'Bound',
  'BindFailed',
  'Unbinding',
  'Unbound',
  'UnbindFailed',
  'Deleting',
  'DeletePending',
  'Deleted',
] as const;
export type ArqState = (typeof ARQ_STATES)[number];
export const ArqStates = namesOf(ARQ_STATES);

/**
 * The ARQ states Cyborg's API shows (`ArqView.cyborgState`, the v2 body's `state`): ours less
 * `Unbinding` (shown as Bound) and `DeletePending` (shown as Deleting); see `cyborgState` in arq.ts.
 */
export const CYBORG_ARQ_STATES = [
  'Initial',
  'BindStarted',
  'Bound',
  'BindFailed',
  'Unbound',
  'UnbindFailed',
  'Deleting',
  'Deleted',
] as const satisfies readonly ArqState[];
export type CyborgArqState = (typeof CYBORG_ARQ_STATES)[number];

/** A compute host's agent session. */
export const HOST_STATES = ['online', 'stale', 'lost'] as const;
export type HostState = (typeof HOST_STATES)[number];
export const HostStates = namesOf(HOST_STATES);

/** A host driver's lifecycle. */
export const DRIVER_STATES = ['uninstalled', 'installing', 'installed', 'updating', 'uninstalling'] as const;
export type DriverState = (typeof DRIVER_STATES)[number];
export const DriverStates = namesOf(DRIVER_STATES);

/** Where a birth starts (an ARQ created, an accelerator discovered): the `from` of its first log line. */
export const NOT_YET = 'none';
/** What a host's DELETE records as its end: no state of the host machine (its actor is gone with it). */
export const HOST_DELETED = 'deleted';

/**
 * The ends a committed transition names (`from`, `to`): any machine's state, a birth's start or
 * a deleted host's end. Accelerators and drivers share `installing` and `uninstalling`; each
 * name is listed once.
 */
export const TRANSITION_ENDS = unique([...ACCELERATOR_STATES, ...ARQ_STATES, ...HOST_STATES, ...DRIVER_STATES, NOT_YET, HOST_DELETED]);
export type TransitionEnd = (typeof TRANSITION_ENDS)[number];

/** A tuple's names in order, each once (a tuple type still: model/ builds its schemas from it). */
type Unique<T extends readonly string[], Seen extends string = never> = T extends readonly [infer H extends string, ...infer R extends readonly string[]]
  ? H extends Seen
    ? Unique<R, Seen>
    : [H, ...Unique<R, Seen | H>]
  : [];

function unique<const T extends readonly string[]>(names: T): Unique<T> {
  return [...new Set(names)] as Unique<T>;
}

/** The states that record a failure (the log keeps its reason, the page marks it). */
const FAILURES: ReadonlySet<string> = new Set([AcceleratorStates.error, ArqStates.BindFailed, ArqStates.UnbindFailed]);

export function isFailureState(state: string): boolean {
  return FAILURES.has(state);
}

/**
 * Off the common path: a failure, or an accelerator whose host is lost. The page's statechart
 * folds the transitions into and out of these until asked for (or until the device is in one).
 */
export function isDetourState(state: string): boolean {
  return FAILURES.has(state) || state === AcceleratorStates.offline;
}
