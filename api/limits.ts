import { Value } from '@sinclair/typebox/value';
import { ConfigSchema, type Config } from '../config/index.js';

/** What one client may cost the api process (config `api`): event-stream clients, pages, ARQs per request, write rate. */
export type ApiLimits = Config['api'];

/** The configured limits over the schema's defaults (a test, a bench, a role that passes none). */
export function apiLimits(over: Partial<ApiLimits> = {}): ApiLimits {
  const defaults = Value.Default(ConfigSchema.properties.api, {}) as ApiLimits;
  return { ...defaults, ...Object.fromEntries(Object.entries(over).filter(([, v]) => v !== undefined)) };
}
