import type { Change } from '../actors/runtime/index.js';
import { CyborgError } from '../errors/index.js';
import { cyborgState, type ArqContext, type ArqView } from '../model/index.js';

/**
 * What PostgreSQL can store, checked when a change is handed to the journal, before it is queued.
 *
 * Why here and not only at the edges: a change joins a batch with hundreds of others, and one
 * value the database refuses fails the whole batch's statement. Text and jsonb cannot hold NUL
 * (U+0000) nor a lone UTF-16 surrogate (it has no UTF-8 form), and a varchar(n) refuses more
 * than n characters. Refused here, the change fails alone, with a clear 400, and the caller
 * knows at once; the batch it would have joined never sees it. The edges (HTTP, bus schemas)
 * refuse most of this earlier; this is the last line, for whatever path they miss.
 *
 * The lengths are the columns' (db/migrations): varchar(255) by default, varchar(36) for uuids.
 */
const NAME = 255;
const UUID = 36;
const INT_MAX = 2 ** 31 - 1;

const wellFormed = String.prototype as unknown as { isWellFormed: (this: string) => boolean };

/** Throws `persistence.invalid_value` for the first value of `changes` the database cannot store. */
export function checkChanges(changes: readonly Change[]): void {
  for (const c of changes) checkChange(c);
}

function checkChange(c: Change): void {
  switch (c.type) {
    case 'host':
      name(c.host, 'host');
      name(c.record.value, 'host state');
      optName(c.record.context.agentId, 'agent id');
      for (const d of c.drivers) {
        name(d.name, 'driver name');
        name(d.version, 'driver version');
      }
      deep(c.record.context, 'host context');
      return;
    case 'inventory':
      name(c.host, 'host');
      for (const d of c.devices) {
        len(d.uuid, UUID, 'device uuid');
        name(d.vendor, 'device vendor');
        name(d.model, 'device model');
        name(d.driver, 'device driver');
        name(d.controlPath.info, 'control path info');
        for (const x of d.deployables) {
          len(x.uuid, UUID, 'deployable uuid');
          name(x.name, 'deployable name');
          optName(x.driverName, 'deployable driver');
          int(x.numAccelerators, 'deployable accelerators');
          for (const h of x.attachHandles) {
            len(h.uuid, UUID, 'attach handle uuid');
            name(h.attachInfo, 'attach info');
          }
        }
      }
      deep(c.devices, 'inventory');
      return;
    case 'accelerator':
      len(c.id, UUID, 'accelerator id');
      name(c.host, 'host');
      name(c.record.value, 'accelerator state');
      deep(c.record.context, 'accelerator context');
      return;
    case 'arq': {
      len(c.uuid, UUID, 'ARQ uuid');
      if (c.deleted) return;
      // Partial: the last line of defence reads each field as if it could be missing.
      const ctx: Partial<ArqContext> = c.record.context;
      name(c.record.value, 'ARQ state');
      name(cyborgState(c.record.value as ArqView['state']), 'ARQ state');
      optName(ctx.projectId, 'project id');
      name(ctx.deviceProfileName, 'device profile name');
      int(ctx.deviceProfileGroupId, 'device profile group id');
      optName(ctx.binding?.hostname, 'hostname');
      optName(ctx.binding?.deviceRpUuid, 'device resource provider uuid');
      optName(ctx.binding?.instanceUuid, 'instance uuid');
      deep(c.record.context, 'ARQ context');
      return;
    }
    case 'transition': {
      const r = c.record;
      name(r.kind, 'transition kind');
      name(r.id, 'transition id');
      optName(r.host, 'transition host');
      name(r.event, 'event');
      name(r.from, 'transition from');
      name(r.to, 'transition to');
      optName(r.actor, 'actor');
      optName(r.projectId, 'project id');
      optName(r.requestId, 'request id');
      optName(r.actorName, 'actor name');
      optName(r.projectName, 'project name');
      if (r.args)
        for (const [k, v] of Object.entries(r.args)) {
          name(k, 'argument name');
          if (typeof v === 'string') name(v, `argument ${k}`);
        }
      deep(r, 'transition');
      if (!Number.isFinite(Date.parse(r.at))) invalid(`transition time ${JSON.stringify(r.at)} is not a time`, 'transition time');
      return;
    }
    case 'document':
      name(c.collection, 'document collection');
      name(c.id, 'document id');
      if (c.collection === 'device_profiles') {
        len(c.id, UUID, 'device profile uuid');
        if (c.body) name(c.body.name, 'device profile name');
      }
      if (c.body) deep(c.body, 'document');
      return;
  }
}

function invalid(message: string, field: string): never {
  throw new CyborgError('persistence.invalid_value', message, { field });
}

/** A string the database can store as text: no NUL, no lone surrogate. */
function text(s: string, field: string): void {
  if (s.includes('\u0000')) invalid(`${field} contains a NUL character, which the database cannot store`, field);
  if (!wellFormed.isWellFormed.call(s)) invalid(`${field} contains a lone UTF-16 surrogate, which has no UTF-8 form`, field);
}

/** A string of at most `max` characters (PostgreSQL counts code points, JavaScript UTF-16 units). */
function len(v: unknown, max: number, field: string): void {
  if (typeof v !== 'string') invalid(`${field} is not a string`, field);
  text(v, field);
  if (v.length > max && [...v].length > max) invalid(`${field} is longer than ${max} characters`, field);
}

const name = (v: unknown, field: string): void => len(v, NAME, field);
const optName = (v: unknown, field: string): void => {
  if (v !== null && v !== undefined) len(v, NAME, field);
};

function int(v: unknown, field: string): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || Math.abs(v) > INT_MAX) invalid(`${field} is not a 32-bit integer`, field);
}

/**
 * Every string of a JSON value (keys too) is storable, walked without recursion (a deep value
 * cannot overflow the stack) and each object once (a cycle cannot loop; JSON.stringify refuses
 * it later, and that commit alone fails).
 */
function deep(value: unknown, field: string): void {
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      text(v, field);
      continue;
    }
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
      continue;
    }
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      text(k, field);
      stack.push((v as Record<string, unknown>)[k]);
    }
  }
}
