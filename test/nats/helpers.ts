/**
 * Helpers of the distributed tests: a private nats-server the test may stop and start, role
 * processes spawned like an operator would (`cyborg <role>`, the TypeScript through tsx's loader)
 * and their JSON logs.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/eventually.js';
import type { LogLine } from '../support/log.js';
import { freePort } from '../support/ports.js';
import { placementEnvFor } from '../keystone/placement-auth.js';

/**
 * How a test runs `cli/main.ts`: this Node with tsx's loader (`node --import tsx`), one process, as
 * the installed `cyborg` is. Not the `tsx` command: it relays a signal to its child and, when the
 * child has not said within 30 ms that it got it — a loaded machine, an event loop busy — sends it
 * again and then SIGKILLs it, so a role asked to stop gracefully (SIGTERM: drain, give the leases
 * back) was sometimes killed outright, leaving its binds to be recovered as interrupted.
 */
export function cyborgCommand(args: string[]): [string, string[]] {
  return [process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args]];
}

/** Whether a `nats-server` binary is on PATH (tests that restart their own server need one). */
export const natsServerInstalled = spawnSync('nats-server', ['--version']).status === 0;

/** A nats-server of the test's own (with JetStream), on a port it keeps across restarts. */
export class PrivateNats {
  private proc: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'cyborg-nats-'));

  private constructor(readonly port: number) {}

  static async start(): Promise<PrivateNats> {
    const n = new PrivateNats(await freePort());
    await n.up();
    return n;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async up(): Promise<void> {
    const proc = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    let out = '';
    const ready = new Promise<void>((resolve, reject) => {
      const on = (b: Buffer): void => {
        out += b.toString();
        if (out.includes('Server is ready')) resolve();
      };
      proc.stderr!.on('data', on);
      proc.stdout!.on('data', on);
      proc.once('exit', (code) => reject(new Error(`nats-server exited (${code}): ${out}`)));
    });
    await ready;
  }

  async down(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await gone;
  }

  async stop(): Promise<void> {
    await this.down();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A role started as its own process, as an operator would: `cyborg <role> …` (`cyborgCommand`). */
export class RoleProcess {
  readonly lines: LogLine[] = [];
  stderr = '';
  private exited: Promise<number | null>;

  constructor(
    readonly name: string,
    readonly proc: ChildProcess,
  ) {
    let buf = '';
    proc.stdout!.on('data', (b: Buffer) => {
      buf += b.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const l = buf.slice(0, i);
        buf = buf.slice(i + 1);
        try {
          this.lines.push(JSON.parse(l) as LogLine);
        } catch {
          // not a log line (a banner); ignore
        }
      }
    });
    proc.stderr!.on('data', (b: Buffer) => {
      this.stderr += b.toString();
      if (process.env.CYBORG_TEST_VERBOSE) process.stderr.write(`[${name}] ${b.toString()}`);
    });
    this.exited = new Promise((r) => proc.once('exit', (code) => r(code)));
  }

  /** `root`: the checkout it runs from (default this one; the upgrade story runs the previous release's). */
  static spawn(name: string, args: string[], env: Record<string, string>, root = join(import.meta.dirname, '..', '..')): RoleProcess {
    const proc = spawn(...cyborgCommand(args), {
      cwd: root,
      // A Placement that validates Keystone tokens (.ci/run's) is reached as the service user, as in production.
      // Strict: a promise rejection nobody handles ends the process at once, and the story says so
      // (`diedOfUnhandledError`) instead of letting it limp on.
      env: {
        ...process.env,
        ...(process.env.PLACEMENT_URL ? placementEnvFor(process.env.PLACEMENT_URL) : {}),
        LOG_PRETTY: 'false',
        LOG_LEVEL: 'debug',
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --unhandled-rejections=strict`.trim(),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    return new RoleProcess(name, proc);
  }

  /**
   * Whether it died of an error nobody handled — in strict mode an unhandled promise rejection is
   * one — rather than being stopped: Node's fatal report ends with its version line.
   */
  get diedOfUnhandledError(): boolean {
    return this.proc.exitCode !== null && this.proc.exitCode !== 0 && /^Node\.js v\d+/m.test(this.stderr);
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  has(pred: (l: LogLine) => boolean): boolean {
    return this.lines.some(pred);
  }

  waitLog(pred: (l: LogLine) => boolean, what: string, timeoutMs = 60_000): Promise<LogLine> {
    return eventually(() => this.lines.find(pred), { what: `${this.name}: ${what}`, timeoutMs }).catch((err: Error) => {
      // Say what the process was doing: its last lines, and stderr if it died.
      const tail = this.lines
        .slice(-12)
        .map((l) => `  ${l.msg} ${l.err ? JSON.stringify(l.err).slice(0, 300) : ''}`)
        .join('\n');
      throw new Error(`${err.message}\n${this.name} (alive: ${this.alive}) last log lines:\n${tail}\nstderr: ${this.stderr.slice(-1500)}`);
    });
  }

  /** SIGKILL: the process gets no chance to flush or say goodbye. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.alive) return;
    // Signal the whole group (the role and anything it started) so nothing is left behind.
    try {
      process.kill(-this.proc.pid!, signal);
    } catch {
      this.proc.kill(signal);
    }
    await this.exited;
  }
}
