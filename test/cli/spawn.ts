import { execFile } from 'node:child_process';
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
