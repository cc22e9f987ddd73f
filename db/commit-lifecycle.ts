import { createMachine } from 'xstate';

/**
 * The lifecycle of one commit in the journal (db/pg-journal.ts), from `commit()` to its answer.
 *
 * Why a table and not an XState actor per commit: a commit lives a millisecond and a Nova boot
 * makes about ten of them; an actor (create, start, three sends) costs 12–14 µs a commit on the
 * bench VM against 0.04 µs for a lookup in this table, and a 5,000-commit flush would spend 65 ms
 * of event loop on bookkeeping alone. The table is the one declaration: the journal steps through
 * it (`stepCommit`), and `commitMachine` is derived from it for the graph tests. It lives in db/, not
 * machines/: it is the journal's own bookkeeping, never a record the database stores.
 *
 * What the states say about the database — the one thing the journal must never get wrong:
 * - `deferred`, `queued`, `flushing`, `retrying`: known NOT to be in the database. These, and only
 *   these, may be answered 503 and `DROP`ped: "503 means not done".
 * - `sent`, `maybeCommitted`: may be in the database (the statement or the COMMIT is on the wire,
 *   or the connection broke once it was). Never answered 503; only the database (its COMMIT's
 *   answer, or the flush's stamp in the transition log) settles them.
 * - `landed` (acknowledged), `refused` (answered with an error, not written), `dropped` (answered
 *   503, not written), `landedAfterRefusal` (answered 503 but found committed: the conductor takes
 *   it back into memory, `Journal.onLanded`).
 */
export const COMMIT_STATES = [
  'received',
  'deferred',
  'queued',
  'flushing',
  'sent',
  'maybeCommitted',
  'retrying',
  'landed',
  'refused',
  'dropped',
  'landedAfterRefusal',
] as const;
export type CommitState = (typeof COMMIT_STATES)[number];
/** The names as an object (`CommitStates.sent`): the journal compares with these, never with a string of its own. */
export const CommitStates = Object.freeze(Object.fromEntries(COMMIT_STATES.map((s) => [s, s]))) as { readonly [K in CommitState]: K };

export const COMMIT_EVENTS = [
  /** Queued to start a flush. */
  'QUEUE',
  /** Queued to ride with the next flush that another commit starts (`CommitOptions.defer`). */
  'DEFER',
  /** Waited `deferMaxMs` without company, or the journal closes: it starts a flush itself now. */
  'PROMOTE',
  /** Taken into a flush. */
  'TAKE',
  /** Its flush's statement (or a pipelined flush's BEGIN / statement / COMMIT) goes out. */
  'SEND',
  /** The database has it: the COMMIT was answered, or the flush's stamp was found. */
  'COMMITTED',
  /** The attempt failed and the transaction is known rolled back or never begun (a server's error answer, no connection). */
  'ROLLED_BACK',
  /** The connection broke once the statement or COMMIT was out: the outcome is open. */
  'LOST',
  /** Its flush's stamp was looked for and is not there: not in the database. */
  'ABSENT',
  /** Answered 503 and left out (the database away too long; a deadline passed): never written. */
  'DROP',
  /** Answered with an error: the database refused its data, or the journal closed on a dead database. */
  'REFUSE',
] as const;
export type CommitEvent = (typeof COMMIT_EVENTS)[number];

const S = CommitStates;

/**
 * Every state's accepted events and where each leads; an event a state does not list is refused
 * (`stepCommit` answers false and leaves the state as it was). Final states list none.
 */
export const COMMIT_LIFECYCLE: { readonly [K in CommitState]: { readonly [E in CommitEvent]?: CommitState } } = {
  received: { QUEUE: S.queued, DEFER: S.deferred },
  deferred: { PROMOTE: S.queued, TAKE: S.flushing, DROP: S.dropped },
  queued: { TAKE: S.flushing, DROP: S.dropped },
  flushing: { SEND: S.sent, DROP: S.dropped, REFUSE: S.refused },
  sent: { COMMITTED: S.landed, ROLLED_BACK: S.retrying, LOST: S.maybeCommitted, REFUSE: S.refused },
  // Written again without a look when its flush carries no stamp (upserts only: harmless twice).
  maybeCommitted: { COMMITTED: S.landed, ABSENT: S.retrying, SEND: S.sent, REFUSE: S.refused },
  retrying: { SEND: S.sent, DROP: S.dropped, REFUSE: S.refused },
  landed: {},
  refused: {},
  // A drop is final for the caller; only the database can still say it had landed after all.
  dropped: { COMMITTED: S.landedAfterRefusal },
  landedAfterRefusal: {},
};

/** The states a commit may be answered 503 in: known not to be in the database. */
export const DROPPABLE: readonly CommitState[] = COMMIT_STATES.filter((s) => COMMIT_LIFECYCLE[s].DROP !== undefined);

/** Answered: nothing more is owed to its caller. */
export function commitSettled(state: CommitState): boolean {
  return state === S.landed || state === S.refused || state === S.dropped || state === S.landedAfterRefusal;
}

/** Something a commit lives in: the journal's pending record. */
export interface HasCommitState {
  state: CommitState;
}

/** Moves `c` by `event` if its state accepts it; false (and no move) if the table refuses it. */
export function stepCommit(c: HasCommitState, event: CommitEvent): boolean {
  const next = COMMIT_LIFECYCLE[c.state][event];
  if (next === undefined) return false;
  c.state = next;
  return true;
}

/**
 * The table as an XState machine: what the graph tests walk (every state reachable, every path to
 * an acknowledgement through `sent`) and what a chart can draw (`machineGraph`). Not run per commit.
 */
export const commitMachine = createMachine({
  id: 'commit',
  types: {} as { events: { type: CommitEvent } },
  initial: S.received,
  states: Object.fromEntries(
    COMMIT_STATES.map((s) => {
      const on = COMMIT_LIFECYCLE[s];
      return [s, Object.keys(on).length === 0 ? { type: 'final' as const } : { on: { ...on } }];
    }),
  ),
});
