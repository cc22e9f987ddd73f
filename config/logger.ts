import { pino, type Logger } from 'pino';
import type { Config } from './index.js';

export type { Logger };

/** The root logger: JSON by default, pretty when a person is watching a terminal. */
export function createLogger(config: Pick<Config, 'logLevel' | 'logPretty'>, name = 'cyborg'): Logger {
  return pino({
    name,
    level: config.logLevel,
    transport: config.logPretty
      ? { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } }
      : undefined,
  });
}

/** A logger that drops everything: tests and benchmarks that do not want output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
