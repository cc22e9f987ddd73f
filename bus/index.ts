// The door of bus/: other rooms import it through this file only (test/architecture.test.ts).
export * from './bus.js';
export * from './decode.js';
export * from './driver-schemas.js';
export * from './in-process.js';
export * from './nats-auth.js';
export * from './nats.js';
export * from './schemas.js';
export * from './subjects.js';
