import { CyborgError, isCyborgError } from '../errors/index.js';
import { callBudgetLeft } from '../actors/runtime/index.js';
import type { ControlRow } from '../model/index.js';

/**
 * "503 is true" on the control plane (docs/persistence.md). A write sent to the conductors carries
 * its caller's wait (`budgetMs`), less a margin for the answer's way back; the conductor commits
 * nothing of it after that (actors/runtime/call-deadline.ts, db/deadline.ts) and answers 503 for
 * what it left out, before the caller stops waiting. So the caller hears either the answer or a
 * 503 that is true — or nothing, when the commit was on the wire as the database went away, or the
 * conductor died: then the outcome is open, and the caller says so (`request.outcome_unknown`),
 * never 503.
 */

/**
 * The writes that carry a deadline: those answered by the ARQ home once committed (ARQs,
 * documents), and an operator's accelerator writes (`act`, `attach`, `detach`: the lease holder
 * commits them in the same journal). Without one, a call that reached a conductor too busy to take
 * it within the api's wait was answered 503 by the api and then made (the rolling-upgrade story's
 * disable that landed after its 503, docs/upgrade.md).
 */
export function carriesDeadline(row: Pick<ControlRow, 'home' | 'repeatable' | 'echo'>): boolean {
  return (row.home === true && row.repeatable !== true) || row.echo === 'accelerator';
}

/** The conductor's budget for a call its caller waits `timeoutMs` for: the margin is for the way back. */
export function budgetFor(timeoutMs: number): number {
  return Math.max(1, timeoutMs - Math.min(2_000, Math.floor(timeoutMs / 4)));
}

/** What a call sent on behalf of the call under way (conductor to conductor) may take: the rest of its budget. */
export function forwardedBudget(timeoutMs: number): number | undefined {
  const left = callBudgetLeft();
  return left === undefined ? undefined : Math.min(left, budgetFor(timeoutMs));
}

/**
 * A call whose deadline passed before it could be served (it waited for its host's rebuild after
 * a lease takeover, say): refused before anything of it is done, so that no driver command goes
 * out for a change that will not be committed.
 */
export function servedTooLate(op: string, lateByMs: number): CyborgError {
  return new CyborgError(
    'persistence.deadline_passed',
    `${op} could not be started before the request had to be answered (${lateByMs} ms late); nothing was changed: send it again once the service is ready`,
    { op, retryAfterS: 1 },
  );
}

/**
 * A write whose answer did not come within its caller's wait: the conductor would have answered
 * 503 by its deadline for anything it left out, so what is missing may be on the database's wire
 * (or the conductor died): not a 503.
 */
export function outcomeUnknown(err: unknown, op: string, timeoutMs: number): unknown {
  if (!isCyborgError(err) || err.code !== 'bus.timeout') return err;
  return new CyborgError(
    'request.outcome_unknown',
    `no conductor answered ${op} within ${Math.round(timeoutMs / 1000)} s; it may or may not have been made: read it back before sending it again`,
    { op },
  );
}
