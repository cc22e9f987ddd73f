/**
 * The door of config/: the one schema (`schema.ts`, its OpenStack and driver sections beside it),
 * the loader that builds a frozen configuration from files, the environment and flags
 * (`load.ts`, `from-file.ts`) and remembers where each value came from (`sources.ts`), the sample
 * (`sample.ts`), the logger, and the errors a process stops with. What other rooms may take,
 * by name; the rest is private to the room.
 */
export { makeDirectory } from './directories.js';
export { ConfigError, StartupError, StartupExit, unusableDirectory } from './errors.js';
export { loadConfig, type LoadOptions } from './load.js';
export { createLogger, silentLogger, type Logger } from './logger.js';
export { browserBlocksPort, PORTS } from './ports.js';
export { parseTrustedProxy } from './proxies.js';
export { configSample } from './sample.js';
export { ConfigSchema, type Config, type DeepPartial, type Role } from './schema.js';
export { DRIVER_NAMES } from './schema-drivers.js';
export { cutValue, optionSource } from './sources.js';
