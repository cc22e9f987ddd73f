// What other folders may import from drivers/: the driver interface and its optional abilities,
// the registry that builds drivers from their names, the fake driver (demos, tests and benches),
// and the small tools the agent shares with the drivers. Each driver kind's folder is private to
// drivers/. The stable ids live in ids/: their users need not load every driver.
export * from './driver.js';
export * from './abilities.js';
export { createDrivers, DRIVER_FACTORIES, DriverRegistry, type DriverSettings } from './registry.js';
export { FakeDriver, type FakeDriverOptions, type HealthFault } from './fake/index.js';
export { addressOf, AllowList, AllowListError } from './generic/index.js';
export { xidPolicy, type XidPolicy } from './nvidia/index.js';
export { LineSplitter } from './lines.js';
export { StateFile, writeAtomic, type StateFileProblem } from './state-file.js';
export { WatchedCommand, type WatchedCommandOptions, type WatchMessages } from './watched-command.js';
