// The door of openstack/placement/: other rooms import it through this file only (test/architecture.test.ts).
export * from './client.js';
export * from './desired.js';
export * from './errors.js';
export * from './metrics.js';
export * from './plan.js';
export * from './reconciler.js';
export * from './roots.js';
export * from './holds.js';
