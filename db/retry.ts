/**
 * Whether an error means "the database cannot be reached right now" (worth retrying the same
 * flush later) rather than "the database refused this change". Socket errors from `pg`, the
 * server's connection / shutdown SQLSTATE classes (08 but 08P01, 57P), and pool acquisition timeouts.
 */
export function isConnectionError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const x = e as { code?: unknown; message?: unknown; name?: unknown; cause?: unknown };
    const code = typeof x.code === 'string' ? x.code : '';
    if (/^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN)$/.test(code)) return true;
    // 08P01 (protocol violation) is the exception in class 08: the server could not parse what
    // we sent (a NUL inside a query's text truncates it), and sending it again fails again.
    if (code === '08P01') return false;
    if (/^(08|57P0[1-3])/.test(code)) return true;
    const msg = typeof x.message === 'string' ? x.message : '';
    if (
      /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|not queryable|ECONNREFUSED|ECONNRESET/i.test(
        msg,
      )
    )
      return true;
    if (x.name === 'ConnectionException') return true;
    e = x.cause;
  }
  return false;
}

/** The SQLSTATE a server error carries (`pg`'s `code`, MikroORM's copy of it), if any. */
export function sqlState(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const x = e as { code?: unknown; sqlState?: unknown; cause?: unknown };
    for (const c of [x.sqlState, x.code]) if (typeof c === 'string' && /^[0-9A-Z]{5}$/.test(c)) return c;
    e = x.cause;
  }
  return undefined;
}

/**
 * What a failed flush means for its batch:
 * - `outage`: the database is unreachable or cannot take writes now (connection errors, the
 *   server shutting down, out of disk or connections: classes 08, 57P, 53), or the transaction
 *   lost a race it will win when run again (class 40: serialization failure, deadlock). The same
 *   batch is retried until it commits — nothing in it is at fault.
 * - `data`: the database refused a value or a row (class 22 data exception, 23 integrity
 *   violation, 54 program limit exceeded): some commit of the batch is at fault, and retrying the
 *   batch as it is would fail forever. It is split until the bad commits fail alone.
 * - `other`: anything else (a statement that cannot run: a bug). Split the same way, so that one
 *   bad commit cannot hold up the others.
 */
export function classifyFailure(err: unknown): 'outage' | 'data' | 'other' {
  if (isConnectionError(err)) return 'outage';
  const state = sqlState(err);
  if (!state) return 'other';
  if (state === '08P01') return 'other';
  if (/^(08|57P|53|40)/.test(state)) return 'outage';
  if (/^(22|23|54)/.test(state)) return 'data';
  return 'other';
}

/**
 * Whether a failed write may still have committed: the connection broke (reset, closed, timed
 * out) once it was established, so the statement or its COMMIT may have reached the server and
 * its answer been lost. A server's error answer (a SQLSTATE) rolls the transaction back, and a
 * connection that was never made (refused, unresolvable, the pool's connect timeout) sent nothing.
 */
export function mayHaveCommitted(err: unknown): boolean {
  if (sqlState(err) !== undefined) return false;
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const x = e as { code?: unknown; message?: unknown; cause?: unknown; commitSent?: unknown; syscall?: unknown };
    if (typeof x.commitSent === 'boolean') return x.commitSent;
    if (x.syscall === 'connect') return false;
    const code = typeof x.code === 'string' ? x.code : '';
    if (/^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH)$/.test(code)) return false;
    const msg = typeof x.message === 'string' ? x.message : '';
    if (/timeout exceeded when trying to connect|ECONNREFUSED|connect ETIMEDOUT/i.test(msg)) return false;
    e = x.cause;
  }
  return true;
}
