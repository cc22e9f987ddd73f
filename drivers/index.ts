export * from './driver.js';
export { DriverRegistry } from './registry.js';
export { FakeDriver, type FakeDriverOptions } from './fake/index.js';
export { uuid3, stableId, sanitizeName, NAMESPACE_DNS } from './ids.js';
