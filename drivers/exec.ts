import { spawn } from 'node:child_process';
import { DriverError } from '../errors/index.js';

/**
 * Why a vendor tool failed, carried as `details.reason` of the DriverError: the agent shows it
 * and an operator can act on it (install the tool, raise the deadline, look at the card).
 */
export type ToolFailure = 'binary_missing' | 'timeout' | 'exit_status' | 'malformed_output';

export interface RunOptions {
  /** The command is killed (its whole process group) when it runs longer. */
  timeoutMs: number;
  /** Each line the tool writes to stdout, as it comes (progress of a long programming). */
  onLine?: (line: string) => void;
  /** What the command is for, in error messages (`program 0000:5e:00.0`). */
  what?: string;
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

/** Runs one vendor tool; injected in tests where a real process is not wanted. */
export type CommandRunner = (argv: readonly string[], opts: RunOptions) => Promise<RunResult>;

/** Output kept per stream: a tool that floods cannot exhaust the agent's memory. */
const MAX_OUTPUT = 4 * 1024 * 1024;

/**
 * Runs `argv` (no shell) with a deadline. A missing binary, a non-zero exit and a command that
 * outlives its deadline each end in a DriverError naming the command and the reason; a hanging
 * tool is killed with its children (it runs in its own process group), so nothing lingers.
 */
export const runCommand: CommandRunner = (argv, opts) =>
  new Promise((resolve, reject) => {
    const [bin, ...args] = argv;
    const what = opts.what ?? argv.join(' ');
    if (!bin) {
      reject(toolError('binary_missing', `${what}: no command configured`, argv));
      return;
    }
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let pending = '';
    let timedOut = false;
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
      // A grandchild may hold the pipes open after the kill: answer now, not when they close.
      finish(() => reject(toolError('timeout', `${what}: no answer within ${opts.timeoutMs} ms, killed`, argv)));
    }, opts.timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (stdout.length < MAX_OUTPUT) stdout += chunk;
      if (!opts.onLine) return;
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const l of lines) if (l.trim() !== '') opts.onLine(l.trimEnd());
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < MAX_OUTPUT) stderr += chunk;
    });
    child.on('error', (err: NodeJS.ErrnoException) =>
      finish(() => {
        const reason: ToolFailure = err.code === 'ENOENT' || err.code === 'EACCES' ? 'binary_missing' : 'exit_status';
        reject(toolError(reason, `${what}: cannot run ${bin}: ${err.message}`, argv, err));
      }),
    );
    child.on('close', (code, signal) =>
      finish(() => {
        if (opts.onLine && pending.trim() !== '') opts.onLine(pending.trimEnd());
        if (timedOut) return;
        if (code === 0) resolve({ stdout, stderr });
        else
          reject(
            toolError('exit_status', `${what}: exited with ${code ?? signal}: ${lastLines(stderr) || lastLines(stdout)}`, argv, undefined, {
              exitCode: code,
              stderr: stderr.slice(-2000),
            }),
          );
      }),
    );
  });

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/**
 * The tool's last words, what an operator is shown as the reason: up to three lines, since the
 * cause often comes before a detail (NVML's "Failed to initialize NVML: Driver/library version
 * mismatch" is followed by "NVML library version: …").
 */
function lastLines(text: string): string {
  return text
    .trim()
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-3)
    .join(' / ')
    .slice(0, 1000);
}

/** The DriverError of a failed tool: `driver.timeout` for a deadline, `driver.failed` else. */
export function toolError(reason: ToolFailure, message: string, argv: readonly string[], cause?: unknown, extra: Record<string, unknown> = {}): DriverError {
  return new DriverError(
    reason === 'timeout' ? 'driver.timeout' : 'driver.failed',
    message,
    { reason, command: argv.join(' '), ...extra },
    cause === undefined ? undefined : { cause },
  );
}

/** Output the driver could not read: the tool answered, but not in the format we know. */
export function malformed(what: string, detail: string, argv: readonly string[] = []): DriverError {
  return toolError('malformed_output', `${what}: output not understood: ${detail}`, argv);
}
