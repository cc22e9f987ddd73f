/**
 * The shared model: the device model, the read-model views, committed transitions and the
 * control-plane interface. No implementation owns it; every room imports it from here.
 */
export * from './accelerator.js';
export * from './arq.js';
export * from './control-plane.js';
export * from './device.js';
export * from './documents.js';
export * from './driver.js';
export * from './events.js';
export * from './host.js';
export * from './placement.js';
export * from './request.js';
export * from './audit.js';
export * from './usage.js';
export * from './capacity.js';
export * from './availability.js';
export * from './refusal.js';
export * from './digest.js';
export * from './fleet.js';
export * from './bounds.js';
export * from './arq-record.js';
export * from './placement-truth.js';
