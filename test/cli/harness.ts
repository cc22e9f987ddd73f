import { CommanderError } from 'commander';
import { pino } from 'pino';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { buildProgram } from '../../cli/main.js';
import type { Io } from '../../cli/output.js';
import { loadConfig } from '../../config/index.js';
import { GenericDriver, SimulatedOps } from '../../drivers/generic/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { GPU_TREE } from '../support/fixtures.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

class UsageExit extends Error {
  constructor(readonly code: number) {
    super(`usage exit ${code}`);
  }
}

/** Runs `cyborg <argv>` in this process, as the real program would, capturing output and exit code. */
export async function cyborg(...argv: string[]): Promise<CliResult> {
  const r: CliResult = { code: -1, stdout: '', stderr: '' };
  const io: Io = {
    out: (t) => {
      r.stdout += t;
    },
    err: (t) => {
      r.stderr += t;
    },
    isTTY: false,
    setExitCode: (c) => {
      r.code = c;
    },
    usageExit: (c) => {
      throw new UsageExit(c);
    },
  };
  // The real program (its --version and the roles included): a subcommand's --version must be its own.
  // Its own exits and output go through io, as the real program's go to the process.
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) r.code = err.exitCode;
    else if (!(err instanceof UsageExit)) throw err;
    else r.code = err.code;
  }
  return r;
}

/** An all-in-one on a free port: the fake driver and the generic driver over the GPU fixture (host operations simulated). */
export async function startCliTarget(host = 'cli-host'): Promise<{ running: Running; url: string; ops: SimulatedOps }> {
  const config = loadConfig({ host, listen: { address: '127.0.0.1', port: 0 }, logLevel: 'silent', logPretty: false }, {});
  const ops = new SimulatedOps();
  const generic = new GenericDriver({ host, sysfsRoot: GPU_TREE, ops, version: '1.0.0' });
  const running = await startAllInOne(config, pino({ level: 'silent' }), { journal: new MemoryJournal(), drivers: [generic] });
  return { running, url: running.url, ops };
}
