import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './schema.js';

export type { Logger };

export interface LoggerOptions {
  toStderr?: boolean;
  /** Where the JSON lines go instead of standard output or error: a test reads them as an ingester would. */
  destination?: DestinationStream;
}

/**
 * The root logger: JSON by default, pretty when a person is watching a terminal. A command whose
 * standard output is its answer (`db migrate`, read by scripts) logs to standard error.
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
  return pino({ name, level: config.logLevel }, opts.destination ?? pino.destination(fd));
}

/** A logger that drops everything: tests and benchmarks that do not want output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
