import { spawn, type ChildProcess } from 'node:child_process';
import { eventually } from './eventually.js';

/**
 * A command run as a user runs it from a shell (`npm start`), in a process group of its own, so
 * that a signal reaches the whole tree (npm, its shell, tsx, node) as a terminal's would, and
 * nothing it started outlives the test.
 */
export class ProcessGroup {
  private readonly child: ChildProcess;
  private out = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(command: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }) {
    this.child = spawn(command, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d: Buffer) => (this.out += d.toString()));
    this.child.stderr!.on('data', (d: Buffer) => (this.out += d.toString()));
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Everything it printed so far, stdout and stderr together. */
  get output(): string {
    return this.out;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The first match of `re` in what it prints; fails early, with its output, if it exits first. */
  async waitFor(re: RegExp, what: string, timeoutMs: number): Promise<RegExpExecArray> {
    return eventually(
      () => {
        const m = re.exec(this.out);
        if (m) return m;
        if (!this.running) throw new Error(`it exited before printing ${what}; it printed:\n${this.out}`);
        return undefined;
      },
      { what: `${what}; it printed so far:\n${this.out}`, timeoutMs, intervalMs: 100 },
    );
  }

  /** Sends `signal` to every process of the group. */
  signal(signal: NodeJS.Signals): void {
    try {
      process.kill(-this.child.pid!, signal);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }

  /**
   * True once no process of the group is left. npm answers a signal by passing it on and dying of
   * it, so the program's own exit is seen here: every process it started is gone.
   */
  get gone(): boolean {
    try {
      process.kill(-this.child.pid!, 0);
      return false;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ESRCH';
    }
  }

  /** Cleanup after a failed test: whatever of the group is left is killed. */
  kill(): void {
    this.signal('SIGKILL');
  }
}
