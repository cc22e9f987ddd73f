import { getShortestPaths, getSimplePaths } from '@xstate/graph';
import { transition, type SnapshotFrom } from 'xstate';
import { describe, expect, it } from 'vitest';
import {
  COMMIT_EVENTS,
  COMMIT_LIFECYCLE,
  COMMIT_STATES,
  commitMachine,
  commitSettled,
  DROPPABLE,
  stepCommit,
  type CommitEvent,
  type CommitState,
} from './commit-lifecycle.js';

type Snap = SnapshotFrom<typeof commitMachine>;
const events = COMMIT_EVENTS.map((type) => ({ type }));
const paths = getShortestPaths(commitMachine, { events });
const reach = (v: CommitState): Snap => {
  const p = paths.find((x) => x.state.value === v);
  if (!p) throw new Error(`${v} not reachable`);
  return p.state as Snap;
};

/** Walks `c` through `steps` by the table, as the journal does; the states it passed through. */
function walk(steps: CommitEvent[], from: CommitState = 'received'): CommitState[] {
  const c = { state: from };
  return steps.map((e) => {
    if (!stepCommit(c, e)) throw new Error(`${c.state} refuses ${e}`);
    return c.state;
  });
}

describe('the commit lifecycle (the journal’s one table)', () => {
  it('reaches every state it declares, and the machine is the table', () => {
    expect([...new Set(paths.map((p) => String(p.state.value)))].sort()).toEqual([...COMMIT_STATES].sort());
    for (const s of COMMIT_STATES)
      for (const e of COMMIT_EVENTS) expect(transition(commitMachine, reach(s), { type: e })[0].value, `${s} ${e}`).toBe(COMMIT_LIFECYCLE[s][e] ?? s);
  });

  // Every event in every state, handled (to where) or refused: the whole table, said once more.
  const table: Record<CommitState, Partial<Record<CommitEvent, CommitState>>> = {
    received: { QUEUE: 'queued', DEFER: 'deferred' },
    deferred: { PROMOTE: 'queued', TAKE: 'flushing', DROP: 'dropped' },
    queued: { TAKE: 'flushing', DROP: 'dropped' },
    flushing: { SEND: 'sent', DROP: 'dropped', REFUSE: 'refused' },
    sent: { COMMITTED: 'landed', ROLLED_BACK: 'retrying', LOST: 'maybeCommitted', REFUSE: 'refused' },
    maybeCommitted: { COMMITTED: 'landed', ABSENT: 'retrying', SEND: 'sent', REFUSE: 'refused' },
    retrying: { SEND: 'sent', DROP: 'dropped', REFUSE: 'refused' },
    landed: {},
    refused: {},
    dropped: { COMMITTED: 'landedAfterRefusal' },
    landedAfterRefusal: {},
  };
  for (const state of COMMIT_STATES)
    for (const event of COMMIT_EVENTS) {
      const target = table[state][event];
      it(`${state} ${target ? `--${event}--> ${target}` : `refuses ${event}`}`, () => {
        const c = { state };
        expect(stepCommit(c, event)).toBe(target !== undefined);
        expect(c.state).toBe(target ?? state);
      });
    }

  it('503 means not done: only a commit known absent from the database may be dropped', () => {
    expect([...DROPPABLE].sort()).toEqual(['deferred', 'flushing', 'queued', 'retrying']);
    // On the wire, or the connection broke once it was: its fate is the database's to say.
    expect(reach('sent').can({ type: 'DROP' })).toBe(false);
    expect(reach('maybeCommitted').can({ type: 'DROP' })).toBe(false);
  });

  it('nothing is acknowledged before it was sent: every path to landed goes through sent', () => {
    const toLanded = getSimplePaths(commitMachine, { events, toState: (s) => s.value === 'landed' });
    expect(toLanded.length).toBeGreaterThan(0);
    for (const p of toLanded) expect(p.steps.map((s) => s.state.value)).toContain('sent');
  });

  it('answered states owe their caller nothing more; final ones take no event', () => {
    expect(COMMIT_STATES.filter(commitSettled)).toEqual(['landed', 'refused', 'dropped', 'landedAfterRefusal']);
    for (const s of ['landed', 'refused', 'landedAfterRefusal'] as const) expect(reach(s).status).toBe('done');
  });

  // The stories of docs/persistence.md, as the journal steps a commit through them.
  it('an idle commit: queued, one flush, acknowledged', () => {
    expect(walk(['QUEUE', 'TAKE', 'SEND', 'COMMITTED'])).toEqual(['queued', 'flushing', 'sent', 'landed']);
  });

  it("a bind's BindStarted: deferred, taken along by Bound's flush; or promoted after deferMaxMs alone", () => {
    expect(walk(['DEFER', 'TAKE', 'SEND', 'COMMITTED']).at(-1)).toBe('landed');
    expect(walk(['DEFER', 'PROMOTE', 'TAKE', 'SEND', 'COMMITTED'])).toEqual(['deferred', 'queued', 'flushing', 'sent', 'landed']);
  });

  it('an outage before the statement went out: retried, then answered 503 and never written', () => {
    expect(walk(['QUEUE', 'TAKE', 'SEND', 'ROLLED_BACK', 'SEND', 'ROLLED_BACK', 'DROP'])).toEqual([
      'queued',
      'flushing',
      'sent',
      'retrying',
      'sent',
      'retrying',
      'dropped',
    ]);
  });

  it('the connection cut once the COMMIT went out: no 503; the stamp found acknowledges it, its absence writes it again', () => {
    const c = { state: 'sent' as CommitState };
    stepCommit(c, 'LOST');
    expect(stepCommit(c, 'DROP')).toBe(false);
    expect(walk(['LOST', 'COMMITTED'], 'sent')).toEqual(['maybeCommitted', 'landed']);
    expect(walk(['LOST', 'ABSENT', 'SEND', 'COMMITTED'], 'sent')).toEqual(['maybeCommitted', 'retrying', 'sent', 'landed']);
  });

  it('a batch the database refuses for its data: split, the bad commit refused alone', () => {
    expect(walk(['ROLLED_BACK', 'SEND', 'ROLLED_BACK', 'REFUSE'], 'sent').at(-1)).toBe('refused');
  });

  it('a 503 that had committed after all is taken back (landedAfterRefusal), never acknowledged', () => {
    expect(walk(['COMMITTED'], 'dropped')).toEqual(['landedAfterRefusal']);
    expect(stepCommit({ state: 'dropped' }, 'SEND')).toBe(false);
  });

  it('close on a dead database: what waits, even what may have committed, is answered and not retried', () => {
    expect(walk(['REFUSE'], 'retrying')).toEqual(['refused']);
    expect(walk(['REFUSE'], 'maybeCommitted')).toEqual(['refused']);
  });
});
