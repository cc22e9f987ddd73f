import { Type, type Static } from '@sinclair/typebox';
import { BoundedName, BackendServiceSchema } from '../model/index.js';

/**
 * Schemas of `cyborg.agent.driver.<host>`: the conductor asks one agent to install, uninstall or
 * update a driver (the generic-driver spec's install-driver / uninstall-driver / update-driver)
 * or to list the services of its backends (discover-services).
 */
export const DriverCommandOp = Type.Union([Type.Literal('install'), Type.Literal('uninstall'), Type.Literal('update'), Type.Literal('services')]);

export const DriverCommandMessage = Type.Object({
  op: DriverCommandOp,
  idempotencyKey: BoundedName({ minLength: 1 }),
  host: BoundedName(),
  driver: BoundedName({ minLength: 1 }),
  /** The version to install or update to; absent: the version the agent ships. */
  version: Type.Optional(BoundedName({ minLength: 1, maxLength: 64 })),
});

export const DriverCommandReply = Type.Union([
  Type.Object({
    ok: Type.Literal(true),
    installed: Type.Boolean(),
    version: Type.String(),
    services: Type.Optional(Type.Array(BackendServiceSchema)),
  }),
  Type.Object({ ok: Type.Literal(false), code: Type.String(), reason: Type.String() }),
]);

export type DriverCommandMsg = Static<typeof DriverCommandMessage>;
export type DriverCommandReplyMsg = Static<typeof DriverCommandReply>;
export type DriverStateMsg = { name: string; version: string; installed: boolean };
