import { Type, type Static } from '@sinclair/typebox';
import { BOUND } from './bounds.js';

/**
 * One usage sample of an accelerator as its driver measured it; a field the driver does not
 * measure is absent. Samples live only in the conductor's memory, in a bounded window per device
 * (the agent spec: telemetry is never stored in the database).
 */
export const UsageSampleSchema = Type.Object({
  at: Type.String({ maxLength: 40, description: 'when the agent measured it (ISO 8601)' }),
  // The bounds the conductor clamps to on receipt (actors/services/usage-window.ts).
  utilization: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'percent busy' })),
  memoryUsedMiB: Type.Optional(Type.Number({ minimum: 0, maximum: 1024 ** 3 })),
  memoryTotalMiB: Type.Optional(Type.Number({ minimum: 0, maximum: 1024 ** 3 })),
  temperatureC: Type.Optional(Type.Number({ minimum: -40, maximum: 150 })),
  powerW: Type.Optional(Type.Number({ minimum: 0, maximum: 5_000 })),
});

/** At most `[conductor] usage_window` samples (config/schema.ts bounds it to this). */
const Samples = Type.Array(UsageSampleSchema, { maxItems: 10_000 });

/** An accelerator's recent usage, oldest sample first. */
export const AcceleratorUsageSchema = Type.Object({
  accelerator: Type.String({ maxLength: BOUND.name }),
  host: Type.String({ maxLength: BOUND.name }),
  samples: Samples,
});

/** A host's accelerators' recent usage (those that reported any). */
export const HostUsageSchema = Type.Object({
  host: Type.String({ maxLength: BOUND.name }),
  devices: Type.Array(Type.Object({ accelerator: Type.String({ maxLength: BOUND.name }), samples: Samples }), { maxItems: 100_000 }),
});

export type UsageSample = Static<typeof UsageSampleSchema>;
export type AcceleratorUsage = Static<typeof AcceleratorUsageSchema>;
export type HostUsage = Static<typeof HostUsageSchema>;
