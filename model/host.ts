import { Type, type Static } from '@sinclair/typebox';

/** The last committed view of a compute host (its agent, its drivers). */
export const HostViewSchema = Type.Object({
  name: Type.String(),
  state: Type.String(),
  agentId: Type.Union([Type.String(), Type.Null()]),
  epoch: Type.Integer(),
  drivers: Type.Array(Type.Object({ name: Type.String(), version: Type.String() })),
  accelerators: Type.Integer(),
  lastHeartbeatAt: Type.Union([Type.String(), Type.Null()]),
});

export type HostView = Static<typeof HostViewSchema>;
