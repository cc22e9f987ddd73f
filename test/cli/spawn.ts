import { execFile, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(ROOT, 'cli/bin.js');

export interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

/** A working directory of its own: what a command creates there (`.cyborg/`) can be looked for. */
export function scratchDir(): string {
  return mkdtempSync(join(tmpdir(), 'cyborg-cli-'));
}

/**
 * `cyborg <argv>` as an operator runs it: the real bin in a process of its own, with only the
 * environment given (none of the test run's DATABASE_URL or NATS_URL leaks in), its exit status
 * and output as a shell sees them.
 */
export async function cyborgProcess(argv: string[], opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<Exit> {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_PRETTY: 'false', ...opts.env };
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...argv], { cwd: opts.cwd ?? scratchDir(), env, timeout: opts.timeoutMs ?? 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The lines of a stream a person reads (pino's JSON lines of other levels left out). */
export function errorLines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));
}

export interface Running {
  /** Everything written so far, stdout and stderr together. */
  output(): string;
  /** Resolves with the first line matching `pattern`; rejects naming what was written when the process ends first or `timeoutMs` passes. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit status. */
  exited: Promise<number | null>;
  kill(): Promise<void>;
}

/** `cyborg <argv>` left running, for what it says while it waits (a role waiting for NATS). */
export function startCyborg(argv: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Running {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_PRETTY: 'false', ...opts.env };
  const child = spawn(process.execPath, [BIN, ...argv], { cwd: opts.cwd ?? scratchDir(), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (b: Buffer): void => {
    text += b.toString();
    for (const l of listeners) l();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      for (const l of listeners) l();
      resolve(code);
    }),
  );
  return {
    output: () => text,
    exited,
    waitFor: (pattern, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const line = text.split('\n').find((l) => pattern.test(l));
          if (line !== undefined) done(() => resolve(line));
          else if (child.exitCode !== null) done(() => reject(new Error(`exited ${child.exitCode} before ${pattern}; it wrote:\n${text}`)));
        };
        const timer = setTimeout(() => done(() => reject(new Error(`no ${pattern} in ${timeoutMs} ms; it wrote:\n${text}`))), timeoutMs);
        const done = (f: () => void): void => {
          clearTimeout(timer);
          listeners.delete(check);
          f();
        };
        listeners.add(check);
        check();
      }),
    kill: async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
