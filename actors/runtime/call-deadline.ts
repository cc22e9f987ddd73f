import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The deadline of the call a piece of work is done for: "503 is true" (docs/persistence.md).
 *
 * An api process waits a bounded time for a conductor's answer and then answers its client. A
 * write the conductor commits after that would be a change the client was told was not made. So
 * a call carries how long its caller waits (`budgetMs` in the control envelope), the responder
 * runs its handler inside a scope with that deadline, and the journal refuses what the scope
 * commits once it has passed: a commit still waiting at the deadline is dropped and answered
 * `persistence.deadline_passed` (503), one made after it is refused at once. Only a commit whose
 * statement is already on the wire can still land; its caller hears no 503 for it (the api's own
 * timeout then answers `request.outcome_unknown`).
 *
 * The scope rides along the call's asynchronous work (AsyncLocalStorage), as the global request id
 * does (openstack/request-id.ts). Once the call has been answered the scope closes: work that
 * outlives it (an actor's timer armed during the call, a long driver operation answered
 * "accepted") is the conductor's own and no longer bound by the caller's wait.
 */
export interface CallDeadline {
  /** Epoch ms on this process's clock. */
  readonly at: number;
  /** Until the call has been answered. */
  open: boolean;
  /** Set by the journal once the deadline passed with commits of the call still waiting. */
  expired: boolean;
  /** The journal's timer for this call's deadline (cleared when the call is answered). */
  timer?: NodeJS.Timeout;
}

const current = new AsyncLocalStorage<CallDeadline>();

/** Runs `fn` as a call answered by `at` (epoch ms); no deadline: runs it as it is. */
export async function withCallDeadline<T>(at: number | undefined, fn: () => Promise<T>): Promise<T> {
  if (at === undefined) return fn();
  const scope: CallDeadline = { at, open: true, expired: false };
  try {
    return await current.run(scope, fn);
  } finally {
    scope.open = false;
    clearTimeout(scope.timer);
  }
}

/** The deadline of the call under way, while it has not been answered. */
export function callDeadline(): CallDeadline | undefined {
  const s = current.getStore();
  return s?.open ? s : undefined;
}

/** How long the call under way may still take (ms), for passing its deadline on to another conductor. */
export function callBudgetLeft(): number | undefined {
  const s = callDeadline();
  return s ? Math.max(1, s.at - Date.now()) : undefined;
}
