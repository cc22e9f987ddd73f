/** The door of metrics/: a role process's Prometheus metrics, the fleet's series, and the small health + /metrics listener. */
export { USAGE_FRESH_MS, type DeviceSeriesOptions } from './devices.js';
export { healthLabels, reasonClass } from './health.js';
export { metricsRoute, startHealthServer, type HealthServer } from './http.js';
export { Metrics, Window, watchFlushes } from './metrics.js';
