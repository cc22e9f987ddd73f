import type { Logger } from 'pino';
import { CommandMessage, CommandReply, Subjects, type Bus } from '../../bus/index.js';
import { DriverError, isCyborgError } from '../../errors/index.js';
import type { DriverOpInput } from '../../machines/index.js';
import { globalRequestId } from '../../openstack/request-id.js';
import { commandKey } from './command-key.js';
import { opDeadlineMs, type Timing } from './timing.js';

/** Where a host's driver commands go: its agent's subject on the bus (a host actor's options). */
export interface CommandRoute {
  /** The host's name. */
  name: string;
  bus: Bus;
  log: Logger;
  timing: Pick<Timing, 'driverOpTimeoutMs' | 'programTimeoutMs'>;
}

/** The pause before re-sending a command nobody was subscribed to hear (an agent reconnecting). */
const NO_RESPONDER_PAUSE_MS = 250;

/** How often an unanswered driver command is re-sent: a third of its deadline, at most 5 s. */
export function resendEveryMs(timeoutMs: number): number {
  return Math.min(5_000, Math.max(1, Math.floor(timeoutMs / 3)));
}

/**
 * Sends a driver command to the host's agent and waits for its answer until its deadline
 * (`opDeadlineMs`). A command or answer lost on the way (NATS reconnecting, the agent's
 * connection bouncing) is re-sent every `resendEveryMs(timeout)` with the same idempotency key:
 * the agent answers a repeat with the first run's result, or joins the run still going, so the
 * operation runs once and completes as soon as an answer gets through — not after the whole
 * deadline, as a failure.
 */
export async function commandAgent(route: CommandRoute, input: DriverOpInput, driver: string): Promise<Record<string, unknown>> {
  const host = route.name;
  const key = commandKey(input);
  const requestId = globalRequestId();
  const msg = { op: input.op, idempotencyKey: key, host, deployableUuid: input.id, driver, params: input.params, ...(requestId ? { requestId } : {}) };
  const deadline = Date.now() + opDeadlineMs(route.timing, input.op);
  // Re-sent at the pace of an ordinary command: the agent joins the run under way.
  const every = resendEveryMs(route.timing.driverOpTimeoutMs);
  for (let attempt = 0; ; attempt++) {
    const left = deadline - Date.now();
    try {
      const reply = await route.bus.request(Subjects.command(host), CommandMessage, CommandReply, msg, { timeoutMs: Math.max(1, Math.min(every, left)) });
      if (!reply.ok)
        throw new DriverError('driver.failed', reply.reason, {
          op: input.op,
          acceleratorId: input.id,
          code: reply.code,
          ...(reply.unchanged ? { unchanged: true } : {}),
        });
      if (attempt > 0) route.log.info({ host, acceleratorId: input.id, op: input.op, attempts: attempt + 1 }, 'driver command answered after a re-send');
      return reply.result;
    } catch (err) {
      // No responder: NATS came back before the agent re-subscribed (or the connection is still
      // reconnecting). The agent's run, if it started, goes on: wait a little and re-send.
      const gone = isCyborgError(err) && err.code === 'bus.no_responder';
      if (!isCyborgError(err) || (err.code !== 'bus.timeout' && !gone)) throw err;
      if (Date.now() >= deadline) {
        throw new DriverError('driver.timeout', `agent on ${host} did not answer ${input.op} in time`, { op: input.op, attempts: attempt + 1 }, { cause: err });
      }
      route.log.warn(
        { host, acceleratorId: input.id, op: input.op, key, attempt: attempt + 1, noResponder: gone },
        'no answer to a driver command yet: re-sending it with the same idempotency key',
      );
      if (gone) await new Promise((r) => setTimeout(r, Math.min(NO_RESPONDER_PAUSE_MS, Math.max(1, deadline - Date.now()))));
    }
  }
}
