import { Type, type Static } from '@sinclair/typebox';
import { HOST_STATES } from '../machines/index.js';
import type { AcceleratorView } from './accelerator.js';
import { Literals } from './literals.js';

/** The last committed view of a compute host (its agent, its drivers). */
export const HostViewSchema = Type.Object({
  name: Type.String(),
  state: Literals(HOST_STATES),
  agentId: Type.Union([Type.String(), Type.Null()]),
  epoch: Type.Integer(),
  drivers: Type.Array(Type.Object({ name: Type.String(), version: Type.String() })),
  accelerators: Type.Integer(),
  lastHeartbeatAt: Type.Union([Type.String(), Type.Null()]),
});

export type HostView = Static<typeof HostViewSchema>;

/** An operator's re-layout of one card: its MIG instances (profile names) or its VF count. */
export const RelayoutRequestSchema = Type.Union([
  Type.Object(
    {
      kind: Type.Literal('mig'),
      address: Type.String({ pattern: '^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]$' }),
      profiles: Type.Array(Type.String({ minLength: 1, maxLength: 32 }), { minItems: 1, maxItems: 8 }),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      kind: Type.Literal('vfs'),
      address: Type.String({ pattern: '^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]$' }),
      count: Type.Integer({ minimum: 0, maximum: 256 }),
    },
    { additionalProperties: false },
  ),
]);

export type RelayoutRequest = Static<typeof RelayoutRequestSchema>;

/** A host's drain as the maintenance routes answer it: in progress while instances still hold devices. */
export type DrainView = { host: string; state: 'draining' | 'drained' | 'none'; accelerators: AcceleratorView[] };
