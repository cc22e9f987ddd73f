import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { AttachHandle, Deployable } from './inventory.js';
import { timestamps } from './timestamps.js';

/**
 * What this design adds to Cyborg's tables: hosts (the agent service), the drivers installed on
 * each, the accelerators' machine records, the append-only transition log and a generic
 * document store; plus Cyborg's own device_profiles and extended_accelerator_requests.
 * Machine records are `state` + `context` (jsonb): exactly what an actor is rebuilt from.
 */
export const Host = defineEntity({
  name: 'Host',
  tableName: 'hosts',
  properties: {
    name: p.string().primary(),
    state: p.string(),
    context: p.json<Record<string, unknown>>(),
    agentId: p.string().nullable(),
    drivers: () => p.oneToMany(Driver).mappedBy('host'),
    ...timestamps,
  },
});

export const Driver = defineEntity({
  name: 'Driver',
  tableName: 'drivers',
  uniques: [{ properties: ['host', 'name'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    host: () => p.manyToOne(Host).fieldName('host').deleteRule('cascade'),
    name: p.string(),
    version: p.string(),
    state: p.string().default('installed'),
    ...timestamps,
  },
});

export const Accelerator = defineEntity({
  name: 'Accelerator',
  tableName: 'accelerators',
  properties: {
    // The deployable's uuid. No foreign key: the record outlives a deployable that disappears.
    id: p.string().length(36).primary(),
    host: p.string().index(),
    state: p.string(),
    context: p.json<Record<string, unknown>>(),
    ...timestamps,
  },
});

export const DeviceProfile = defineEntity({
  name: 'DeviceProfile',
  tableName: 'device_profiles',
  uniques: [{ properties: ['uuid', 'name'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    uuid: p.string().length(36).unique(),
    name: p.string().unique(),
    profileJson: p.text(),
    description: p.text().nullable(),
    ...timestamps,
  },
});

export const ExtendedAcceleratorRequest = defineEntity({
  name: 'ExtendedAcceleratorRequest',
  tableName: 'extended_accelerator_requests',
  properties: {
    id: p.integer().primary().autoincrement(),
    uuid: p.string().length(36).unique(),
    projectId: p.string().nullable().index(),
    // Cyborg's state name; `machineState` + `context` are the machine record it is rebuilt from.
    state: p.string(),
    machineState: p.string(),
    context: p.json<Record<string, unknown>>(),
    deviceProfile: () => p.manyToOne(DeviceProfile).fieldName('device_profile_id').nullable().deleteRule('set null').index(),
    deviceProfileName: p.string(),
    deviceProfileGroupId: p.integer(),
    hostname: p.string().nullable(),
    deviceRpUuid: p.string().nullable().index(),
    instanceUuid: p.string().nullable().index(),
    attachHandle: () => p.manyToOne(AttachHandle).fieldName('attach_handle_id').nullable().deleteRule('set null').index(),
    substate: p.string().default('Initial'),
    deployable: () => p.manyToOne(Deployable).fieldName('deployable_id').nullable().deleteRule('set null').index(),
    ...timestamps,
  },
});

export const TransitionLog = defineEntity({
  name: 'TransitionLog',
  tableName: 'transition_log',
  // (host, at, seq) and (at, seq): the audit's keyset pages by host and time range, and retention.
  indexes: [{ properties: ['id', 'seq'] }, { properties: ['host', 'at', 'seq'] }, { properties: ['at', 'seq'] }],
  // Partial: one row per flush carries a stamp (Migration20261122170000_flush_stamp).
  uniques: [
    {
      name: 'transition_log_flush_unique',
      expression: 'create unique index "transition_log_flush_unique" on "transition_log" ("flush") where "flush" is not null',
    },
  ],
  properties: {
    seq: p.bigint('number').primary().autoincrement(),
    kind: p.string(),
    // The accelerator / ARQ / host the transition belongs to.
    id: p.string(),
    host: p.string().nullable(),
    event: p.string(),
    from: p.string(),
    to: p.string(),
    actor: p.string().nullable(),
    /** The caller's project, as Keystone told it (Migration20261123220000_audit). */
    projectId: p.string().nullable(),
    /** The caller's user and project names from Keystone's token answer, beside the ids (Migration20261127050000_audit_names). */
    actorName: p.string().nullable(),
    projectName: p.string().nullable(),
    requestId: p.string().nullable(),
    reason: p.text().nullable(),
    /** The action's arguments that matter to an auditor; never secrets (see changeOf). */
    args: p.json<Record<string, string | number | boolean>>().nullable(),
    at: p.datetime(),
    /** On the last row of each flush: the flush's id (unique), to tell a lost COMMIT answer from a lost COMMIT. */
    flush: p.string().length(64).nullable(),
  },
});

export const Document = defineEntity({
  name: 'Document',
  tableName: 'documents',
  properties: {
    collection: p.string().primary(),
    id: p.string().primary(),
    body: p.json<Record<string, unknown>>(),
    ...timestamps,
  },
});

export type ITransitionLog = InferEntity<typeof TransitionLog>;
