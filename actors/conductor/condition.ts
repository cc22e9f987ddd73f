import type { AcceleratorContext } from '../../machines/index.js';

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
    return { event: cause, args: { released: released.join(','), by: cause }, warn: true, message: 'instance released from an accelerator that could not detach it: the card stays in error' };
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
  const scopes = (ctx: AcceleratorContext): string => [ctx.maintenance?.device ? 'device' : '', ctx.maintenance?.host ? 'host' : ''].filter(Boolean).join('+') || 'none';
  const args = { maintenance: `${scopes(before)}→${scopes(after)}`, by: cause };
  const drainEnded = before.maintenance?.host === true && after.maintenance?.host !== true;
  if (drainEnded) return { event: cause, args, warn: true, message: 'drain ended on this accelerator: its host mark is lifted' };
  return { event: cause, args, warn: false, message: 'maintenance mark changed' };
}
