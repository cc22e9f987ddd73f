/**
 * Whether an error means "the database cannot be reached right now" (worth retrying the same
 * flush later) rather than "the database refused this change". Socket errors from `pg`, the
 * server's connection / shutdown SQLSTATE classes (08, 57P), and pool acquisition timeouts.
 */
export function isConnectionError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const x = e as { code?: unknown; message?: unknown; name?: unknown; cause?: unknown };
    const code = typeof x.code === 'string' ? x.code : '';
    if (/^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN)$/.test(code)) return true;
    if (/^(08|57P0[1-3])/.test(code)) return true;
    const msg = typeof x.message === 'string' ? x.message : '';
    if (/Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|not queryable|ECONNREFUSED|ECONNRESET/i.test(msg)) return true;
    if (x.name === 'ConnectionException') return true;
    e = x.cause;
  }
  return false;
}
