// The door of control/: other rooms import it through this file only (test/architecture.test.ts).
export * from './arq-ops.js';
export * from './client.js';
export * from './driver-client.js';
export * from './messages.js';
export * from './payload.js';
export * from './read-model.js';
export * from './responder.js';
export * from './snapshot.js';
export * from './view-publisher.js';
export * from './view-sync.js';
export * from './view-check.js';
