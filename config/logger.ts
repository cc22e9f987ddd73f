import { channel } from 'node:diagnostics_channel';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './schema.js';

export type { Logger };

export interface LoggerOptions {
  toStderr?: boolean;
  /** Where the JSON lines go instead of standard output or error: a test reads them as an ingester would. */
  destination?: DestinationStream;
  /** A file (or FIFO, or device) to write the JSON lines to, through the same asynchronous destination as a descriptor. */
  file?: string;
  /** Most bytes held for a destination that does not take them (default 16 MiB); past it, lines are dropped and counted. */
  maxBufferedBytes?: number;
}

/**
 * Where the count of log lines a blocked destination made us drop is published (node:diagnostics_channel):
 * `{ lines }` per drop. metrics/ subscribes (`cyborg_log_lines_dropped_total`), without config/
 * and metrics/ importing each other.
 */
export const LOG_DROPPED_CHANNEL = 'cyborg:log.dropped';
const dropped = channel(LOG_DROPPED_CHANNEL);

/**
 * The root logger: JSON by default, pretty when a person is watching a terminal. A command whose
 * standard output is its answer (`db migrate`, read by scripts) logs to standard error.
 *
 * Lines are written asynchronously (pino's own SonicBoom with `sync: false`): a write never
 * blocks the event loop, so logging costs the hot path a string and a buffer append, not a
 * system call per line (a synchronous destination was 16 % of the all-in-one's busy time under
 * Nova's load). See `asyncDestination` for a destination that stops taking lines.
 */
export function createLogger(config: Pick<Config, 'logLevel' | 'logPretty'>, name = 'cyborg', opts: LoggerOptions = {}): Logger {
  const fd = opts.toStderr ? 2 : 1;
  if (config.logPretty) {
    return pino({
      name,
      level: config.logLevel,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', destination: fd } },
    });
  }
  return pino({ name, level: config.logLevel }, opts.destination ?? asyncDestination(opts.file ?? fd, opts.maxBufferedBytes));
}

/**
 * An asynchronous destination that survives one that blocks (a pipe nobody reads, a full disk):
 * what it cannot take waits in memory up to `maxBytes`; past that, lines are dropped — counted on
 * `LOG_DROPPED_CHANNEL` — rather than held without bound or written synchronously. A write error
 * (ENOSPC, EIO) is kept from crashing the process; the buffer is tried again with the next line.
 * It is said once, in one line with the count, when the destination takes lines again (again
 * at most every 10 minutes; the metric counts every line). At exit the
 * buffer is flushed only if the destination was taking lines: a synchronous flush into a pipe
 * nobody reads would hang the stop.
 */
export function asyncDestination(dest: number | string, maxBytes = 16 * 1024 * 1024): DestinationStream {
  const stream = pino.destination({ dest, sync: false, maxLength: maxBytes });
  let lost = 0;
  let failing: string | undefined;
  // When the destination last took a write, and whether a line waits since: a stuck one is not flushed at exit.
  let takenAt = Date.now();
  let waiting = false;
  let blocked = false;
  const write = stream.write.bind(stream);
  stream.write = (line: string) => {
    waiting = true;
    return write(line);
  };
  stream.on('drop', (data: string) => {
    let lines = 0;
    for (let i = data.indexOf('\n'); i >= 0; i = data.indexOf('\n', i + 1)) lines++;
    lost += Math.max(1, lines);
    blocked = true;
    dropped.publish({ lines: Math.max(1, lines) });
  });
  // Kept from becoming an uncaught 'error' (pino re-emits all but EPIPE): the lines stay buffered.
  stream.on('error', (err: NodeJS.ErrnoException) => {
    failing ??= err.code ?? err.message;
    blocked = true;
  });
  stream.on('write', () => {
    takenAt = Date.now();
    waiting = false;
    blocked = false;
  });
  // Said once the buffer is empty again (a line said earlier would find no room and be dropped
  // too), and once (again at most every 10 minutes): the metric counts every line, the log need not.
  let saidAt = -Infinity;
  stream.on('drain', () => {
    if ((lost === 0 && failing === undefined) || Date.now() - saidAt < 600_000) return;
    saidAt = Date.now();
    const line = JSON.stringify({
      level: 40,
      time: Date.now(),
      msg: 'the log destination did not take lines for a while: some were dropped (cyborg_log_lines_dropped_total counts them all)',
      dropped: lost,
      ...(failing ? { error: failing } : {}),
    });
    lost = 0;
    failing = undefined;
    stream.write(`${line}\n`);
  });
  const flushSync = stream.flushSync.bind(stream);
  stream.flushSync = () => {
    if (blocked || (waiting && Date.now() - takenAt > 1_000)) return;
    try {
      flushSync();
    } catch {
      // Exiting: a destination that fails now cannot be told about it.
    }
  };
  return stream;
}

/** A logger that drops everything: tests and benchmarks that do not want output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
