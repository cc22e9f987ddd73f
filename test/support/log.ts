import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** One JSON log line as pino writes it. */
export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** A logger that says nothing, unless TEST_LOG_LEVEL asks (e.g. `TEST_LOG_LEVEL=debug` to read a failure). */
export function quietLogger(): Logger {
  return pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
}

/** A logger that keeps every line, so a test can assert what an operator would read. */
export function captureLogger(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as LogLine);
      cb();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines };
}
