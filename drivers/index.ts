// What other folders may import from drivers/: the driver interface and its optional abilities,
// the registry that builds drivers from their names, the fake driver (demos, tests and benches),
// and the small tools the agent shares with the drivers. Each driver kind's folder is private to
// drivers/. The stable ids live in ids/: their users need not load every driver.
export {
  type AttachPreparer,
  canAttach,
  canInstall,
  canManageLifecycle,
  canProgram,
  canReportHealth,
  canReportServices,
  canReportUsage,
  canReset,
  type Driver,
  type DriverDeployable,
  type DriverDevice,
  type DriverInfo,
  type DriverLifecycle,
  type Health,
  type HealthReporter,
  type Installer,
  type LifecycleRequest,
  type OpRequest,
  type OpResult,
  type Programmer,
  type Resetter,
  type ServiceReporter,
  type Usage,
  type UsageReporter,
} from './driver.js';
export {
  type BoundHandle,
  type BoundRestorer,
  canDiscoverPartially,
  canHoldImages,
  canManageMig,
  canObserve,
  canRestoreBound,
  canSetVfCount,
  canWatchHealth,
  type HealthWatch,
  type HealthWatcher,
  type HostObserver,
  type ImageHolder,
  type MigLayoutManager,
  type Observation,
  type PartialDiscoverer,
  type PartialDiscovery,
  type Progress,
  type ProgressProgrammer,
  type UnobservedDevice,
  type VfCountManager,
} from './abilities.js';
export { createDrivers, DRIVER_FACTORIES, DriverRegistry, type DriverSettings } from './registry.js';
export { FakeDriver, type FakeDriverOptions, type HealthFault } from './fake/index.js';
export { addressOf, AllowList, AllowListError } from './generic/index.js';
export { xidPolicy, type XidPolicy } from './nvidia/index.js';
export { LineSplitter } from './lines.js';
export { StateFile, writeAtomic, type StateFileProblem } from './state-file.js';
export { WatchedCommand, type WatchedCommandOptions, type WatchMessages } from './watched-command.js';
