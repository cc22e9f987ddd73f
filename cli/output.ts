import Table from 'cli-table3';
import yoctoSpinner from 'yocto-spinner';
import { ApiError, UnreachableError } from './client.js';

/** Where a command writes, and how it ends: the process, or a test's buffers. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Spinners only where a person watches. */
  readonly isTTY: boolean;
  /** The command's exit code (set once it has finished). */
  setExitCode(code: number): void;
  /** Commander's usage errors and help end here (process: exit; tests: throw). */
  usageExit(code: number): never;
}

export const processIo: Io = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
  isTTY: Boolean(process.stderr.isTTY),
  setExitCode: (code) => {
    process.exitCode = code;
  },
  usageExit: (code) => process.exit(code),
};

/**
 * Exit codes scripts can trust (docs/cli.md):
 * 0 done · 1 unexpected error · 2 bad usage or request · 3 not found · 4 refused (conflict:
 * the state does not allow it, in use, busy) · 5 a driver or agent failed or timed out ·
 * 6 the API (or Keystone, signing in) is unreachable or unavailable · 7 not authorized (the API's
 * 401 / 403, or Keystone refused the credentials) · 8 the OpenStack client configuration cannot
 * be used (unknown cloud, clouds.yaml not YAML, missing auth options; cli/auth).
 */
export const ExitCode = { ok: 0, failure: 1, usage: 2, notFound: 3, refused: 4, driverFailed: 5, unavailable: 6, unauthorized: 7, config: 8 } as const;

/** The command line asks for something that cannot be: exit 2, with what to write instead. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError) return ExitCode.usage;
  if (err instanceof UnreachableError) return ExitCode.unavailable;
  if (!(err instanceof ApiError)) return ExitCode.failure;
  const s = err.status;
  if (s === 400 || s === 422) return ExitCode.usage;
  if (s === 401 || s === 403) return ExitCode.unauthorized;
  if (s === 404) return ExitCode.notFound;
  if (s === 409 || s === 423) return ExitCode.refused;
  // driver.timeout is a 503 (retry later), but to a person it is still "the agent did not answer".
  if (s === 502 || s === 504 || err.code === 'driver.timeout') return ExitCode.driverFailed;
  if (s === 503) return ExitCode.unavailable;
  return ExitCode.failure;
}

/** The error as a person should read it: what happened, then what to do. */
export function describeError(err: unknown, url: string): string {
  if (err instanceof UnreachableError) {
    return `cyborg: ${err.message}\n  Is it running? Start one with "cyborg all-in-one", or point --url / CYBORG_URL at it.\n`;
  }
  if (err instanceof ApiError) {
    const lines = [`cyborg: ${err.message} [${err.code}]`];
    const allowed = err.body.allowed;
    if (Array.isArray(allowed)) lines.push(`  state: ${String(err.body.state)}; allowed now: ${allowed.join(', ') || 'nothing'}`);
    if (err.code === 'route.not_found')
      lines.push(`  The API at ${url} does not serve this command: is it a Cyborg API of this project, and the all-in-one or conductor-backed api role?`);
    if (err.status >= 500 && err.status !== 502 && err.status !== 503 && err.status !== 504) lines.push("  The API's log has the details.");
    return `${lines.join('\n')}\n`;
  }
  return `cyborg: ${err instanceof Error ? err.message : String(err)}\n`;
}

/** A table for people: plain text, no colours (pipes and logs stay readable). */
export function table(head: string[], rows: (string | number)[][]): string {
  const t = new Table({ head, style: { head: [], border: [], compact: true } });
  t.push(...rows.map((r) => r.map(String)));
  return `${t.toString()}\n`;
}

/** Two columns, field and value: one object shown in full. */
export function fields(pairs: [string, string | number][]): string {
  const t = new Table({ style: { head: [], border: [] } });
  t.push(...pairs.map(([k, v]) => ({ [k]: String(v) })));
  return `${t.toString()}\n`;
}

/** Shows a spinner with the elapsed seconds while `work` runs, where a person is watching. */
export async function withProgress<T>(io: Io, quiet: boolean, text: string, work: Promise<T>): Promise<T> {
  if (!io.isTTY || quiet) return work;
  const started = Date.now();
  const spinner = yoctoSpinner({ text, handleSignals: false }).start();
  const tick = setInterval(() => {
    spinner.text = `${text} (${Math.round((Date.now() - started) / 1000)} s)`;
  }, 1000);
  try {
    const v = await work;
    spinner.success(`${text}: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return v;
  } catch (err) {
    spinner.error(`${text}: failed`);
    throw err;
  } finally {
    clearInterval(tick);
  }
}
