import type { Logger } from 'pino';
import { AcceleratorStates, type AcceleratorContext, type AcceleratorState } from '../../machines/index.js';
import type { RequestMeta, TransitionRecord } from '../../model/index.js';
import type { AcceleratorRecord } from '../runtime/index.js';
import { conditionOf, type AcceleratorSpec } from './accelerator-view.js';

/**
 * What an operator is told when an accelerator's health or maintenance changes without its
 * lifecycle state moving: the audit row's event (`DEGRADED`, `QUARANTINED`, `RECOVERED`; a
 * maintenance mark keeps the operator's own `MAINTAIN` / `END_MAINTENANCE`), the arguments that
 * say what changed, and whether it deserves a `warn` line (every health change and a drain's end
 * do: they are what an on-call person is paged about).
 */
export interface ConditionChange {
  event: string;
  args: Record<string, string>;
  warn: boolean;
  /** The log line's message. */
  message: string;
}

type Health = NonNullable<AcceleratorContext['health']>;

const statusOf = (ctx: AcceleratorContext): Health['status'] => ctx.health?.status ?? 'ok';

/**
 * The change from `before` to `after` as the audit and the log name it; `cause` is the machine
 * event that made it (`HEALTH`, `CLEAR_HEALTH`, `RESET`, `MAINTAIN`, …).
 */
export function conditionChange(before: AcceleratorContext, after: AcceleratorContext, cause: string): ConditionChange {
  if (after.allocations.length < before.allocations.length) {
    const left = new Set(after.allocations.map((a) => a.handleUuid));
    const released = before.allocations.filter((a) => !left.has(a.handleUuid)).map((a) => a.instanceUuid);
    return {
      event: cause,
      args: { released: released.join(','), by: cause },
      warn: true,
      message: 'instance released from an accelerator that could not detach it: the card stays in error',
    };
  }
  const was = statusOf(before);
  const now = statusOf(after);
  const fatalNow = after.health?.fatal === true && before.health?.fatal !== true;
  if (now !== was || fatalNow) {
    const args: Record<string, string> = { health: `${was}→${now}`, by: cause };
    if (now === 'ok') {
      if (before.health?.reason) args.was = before.health.reason;
      return { event: 'RECOVERED', args, warn: true, message: 'accelerator recovered: back in service' };
    }
    args.severity = after.health?.fatal ? 'fatal' : 'transient';
    if (now === 'quarantined') {
      return { event: 'QUARANTINED', args, warn: true, message: 'accelerator quarantined: out of service, reserved in Placement' };
    }
    return { event: 'DEGRADED', args, warn: true, message: 'accelerator degraded: a bad health check; still in service' };
  }
  const scopes = (ctx: AcceleratorContext): string =>
    [ctx.maintenance?.device ? 'device' : '', ctx.maintenance?.host ? 'host' : ''].filter(Boolean).join('+') || 'none';
  const args = { maintenance: `${scopes(before)}→${scopes(after)}`, by: cause };
  const drainEnded = before.maintenance?.host === true && after.maintenance?.host !== true;
  if (drainEnded) return { event: cause, args, warn: true, message: 'drain ended on this accelerator: its host mark is lifted' };
  return { event: cause, args, warn: false, message: 'maintenance mark changed' };
}

/**
 * A change of state that cleared a bad health on its way (an operator's reset, `resetting →
 * ready`, clears it with the driver's reset): a recovery as much as a clear-health is. Told the
 * same way, one `warn` line, and `health`, `was` and `by` on the transition's row, which the
 * metrics count as `recovered`; otherwise a dashboard shows quarantines but never their ends.
 */
export function recoveryOnTheWay(before: AcceleratorContext, after: AcceleratorContext, from: string, to: string, event: string): ConditionNote | null {
  if (from === to || statusOf(before) === 'ok' || statusOf(after) !== 'ok') return null;
  const byReset = from === AcceleratorStates.resetting;
  const change = conditionChange(before, after, byReset ? 'RESET' : event);
  if (byReset) change.message = 'accelerator recovered: reset by an operator, back in service';
  return { change, ctx: after, reason: undefined };
}

/** A change of condition that left the state where it was: what is committed and told of it. */
export interface ConditionNote {
  change: ConditionChange;
  ctx: AcceleratorContext;
  /** The fault's reason while the device is not healthy. */
  reason: string | undefined;
}

/**
 * What `cause` changed of an accelerator's health, maintenance or holders without moving its
 * state: the machine host records only changes of state, so this one is committed apart. Null
 * when an observer would see nothing new (a hysteresis counter moved, nothing else).
 */
export function conditionNote(before: AcceleratorRecord, after: AcceleratorRecord, cause: string): ConditionNote | null {
  if (after.value !== before.value || after.context === before.context) return null;
  const ctx = after.context;
  const was = before.context;
  // An operator's RELEASE changes only who holds the card (it stays in error): committed too.
  if (conditionOf(ctx) === conditionOf(was) && ctx.allocations.length === was.allocations.length) return null;
  const reason = ctx.health && ctx.health.status !== 'ok' ? (ctx.health.reason ?? undefined) : undefined;
  return { change: conditionChange(was, ctx, cause), ctx, reason };
}

/** The transition committed for a note: named for what changed (QUARANTINED, not `ready→ready`). */
export function conditionTransition(note: ConditionNote, state: AcceleratorState, meta: RequestMeta): Omit<TransitionRecord, 'kind' | 'id' | 'host'> {
  const { change, reason } = note;
  return { event: change.event, from: state, to: state, at: new Date().toISOString(), ...meta, ...(reason ? { reason } : {}), args: change.args };
}

/** The `warn` line of a note that deserves one: what an on-call person is paged with. */
export function warnCondition(log: Logger, id: string, spec: AcceleratorSpec, note: ConditionNote, requestId: string | undefined): void {
  const { change, ctx, reason } = note;
  const consumers = ctx.allocations.map((a) => a.instanceUuid);
  log.warn(
    {
      acceleratorId: id,
      accelerator: spec.deployable.name,
      host: spec.host,
      change: change.event,
      ...change.args,
      reason: reason ?? null,
      consumers,
      requestId,
    },
    change.message,
  );
}

/** The end of a host's drain on one card: the last instance left it. */
export function warnIfDrained(log: Logger, id: string, spec: AcceleratorSpec, from: string, persisted: AcceleratorRecord, requestId: string | undefined): void {
  const ctx = persisted.context;
  if (from !== AcceleratorStates.detaching || !ctx.maintenance?.host || ctx.allocations.length > 0) return;
  // The alert on a stuck drain is waiting for this line.
  log.warn(
    { acceleratorId: id, accelerator: spec.deployable.name, host: spec.host, change: 'DRAINED', consumers: [], requestId },
    'drain done on this accelerator: no instance holds it any more',
  );
}
