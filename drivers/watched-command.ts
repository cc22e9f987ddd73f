import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';

/** What the log says about a watched command, in the words of what it watches for. */
export interface WatchMessages {
  /** It runs (first start). */
  up: string;
  /** It runs again after an outage. */
  back: string;
  /** It could not start or died: the first failure of an outage (warn). */
  down: string;
  /** It failed again during the same outage (debug). */
  again: string;
}

export interface WatchedCommandOptions {
  argv: readonly string[];
  log: Logger;
  messages: WatchMessages;
  /** Each chunk of its standard output, as it comes (cut anywhere). */
  onData: (chunk: string) => void;
  /** Its output ended (it died or was stopped): a parser hands over what it still holds. */
  onEnd?: () => void;
  /** It has run long enough to count as up; `outage` when it is back after failing. */
  onUp?: (outage: { failures: number; downForMs: number } | undefined) => void;
  /** First retry after a failure; doubled after each up to `retryMaxMs`. */
  retryMinMs?: number;
  retryMaxMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** The command counts as running once it has lived this long: only then is it "back" after a failure. */
const UP_AFTER_MS = 1_000;
/** A run this long resets the back-off: one that dies every few seconds keeps it long. */
const STABLE_AFTER_MS = 60_000;
const STDERR_KEPT = 2_048;

/**
 * A long-running command whose output is followed (`udevadm monitor`, `dmesg --follow-new`). If it
 * is missing or dies, that is logged once per outage with the reason (its last stderr line) and it
 * is started again with a doubling back-off; the owner hears when it is up again, since what
 * happened during the outage was not seen. Nothing it prints or fails with is thrown.
 */
export class WatchedCommand {
  private child: ChildProcess | undefined;
  private stopped = true;
  private retryTimer: NodeJS.Timeout | undefined;
  private upTimer: NodeJS.Timeout | undefined;
  private retryMs: number;
  private failures = 0;
  private downSince = 0;
  private readonly retryMinMs: number;
  private readonly retryMaxMs: number;

  constructor(private readonly opts: WatchedCommandOptions) {
    this.retryMinMs = opts.retryMinMs ?? 1_000;
    this.retryMaxMs = opts.retryMaxMs ?? 300_000;
    this.retryMs = this.retryMinMs;
  }

  get argv(): readonly string[] {
    return this.opts.argv;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.launch();
  }

  /** Stops following and waits for the command to exit (SIGTERM, then SIGKILL after 2 s). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of [this.retryTimer, this.upTimer]) clearTimeout(t);
    this.retryTimer = this.upTimer = undefined;
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    child.kill('SIGTERM');
    const kill = setTimeout(() => child.kill('SIGKILL'), 2_000);
    await exited;
    clearTimeout(kill);
  }

  private launch(): void {
    const [cmd, ...args] = this.opts.argv;
    let stderr = '';
    let ended = false;
    const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'], env: this.opts.env ?? process.env });
    this.child = child;
    const end = (reason: string): void => {
      if (ended) return;
      ended = true;
      this.opts.onEnd?.();
      if (this.child === child) this.failed(reason, child);
    };
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => this.opts.onData(chunk));
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-STDERR_KEPT)));
    child.once('spawn', () => {
      const started = Date.now();
      this.upTimer = setTimeout(() => this.up(), UP_AFTER_MS);
      this.upTimer.unref();
      child.once('close', () => {
        if (Date.now() - started >= STABLE_AFTER_MS) this.retryMs = this.retryMinMs;
      });
    });
    child.once('error', (err: NodeJS.ErrnoException) => end(err.code === 'ENOENT' ? `${cmd} not found` : err.message));
    child.once('close', (code, signal) => {
      const said = stderr.trim().split('\n').at(-1);
      end(`${cmd} exited (${signal ?? `code ${code}`})${said ? `: ${said}` : ''}`);
    });
  }

  private up(): void {
    this.upTimer = undefined;
    const { log, messages, argv } = this.opts;
    if (this.failures === 0) {
      log.info({ argv }, messages.up);
      this.opts.onUp?.(undefined);
      return;
    }
    const outage = { failures: this.failures, downForMs: Date.now() - this.downSince };
    log.info({ argv, ...outage }, messages.back);
    this.failures = 0;
    this.opts.onUp?.(outage);
  }

  private failed(reason: string, child: ChildProcess): void {
    clearTimeout(this.upTimer);
    this.upTimer = undefined;
    this.child = undefined;
    if (this.stopped) return;
    const retryInMs = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, this.retryMaxMs);
    const about = { reason, retryInMs, argv: this.opts.argv, pid: child.pid };
    if (this.failures++ === 0) {
      this.downSince = Date.now();
      this.opts.log.warn(about, this.opts.messages.down);
    } else {
      this.opts.log.debug({ ...about, failures: this.failures }, this.opts.messages.again);
    }
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.stopped) this.launch();
    }, retryInMs);
    this.retryTimer.unref();
  }
}
