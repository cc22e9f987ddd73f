import { rpUuidOf } from '../../ids/index.js';
import { allowedEvents, conditionTags, type AcceleratorContext, type AcceleratorEvent, type AcceleratorState } from '../../machines/index.js';
import type { AcceleratorView, DeployableT, DeviceT } from '../../model/index.js';
import type { AcceleratorRecord } from '../runtime/index.js';
import { tagsOf, type AcceleratorLogic } from './accelerator-logic.js';

/** What discovery says about one accelerator: its device and its deployable. */
export interface AcceleratorSpec {
  host: string;
  device: Omit<DeviceT, 'deployables'>;
  deployable: DeployableT;
}

/**
 * What of an accelerator's health and maintenance an observer sees. A change of it is committed
 * and published like a transition (from and to the same state); the hysteresis counters under it
 * are not, so a device checked 10 times a second writes nothing until its status moves.
 */
export function conditionOf(ctx: AcceleratorContext): string {
  const h = ctx.health;
  const m = ctx.maintenance;
  return `${h?.status ?? 'ok'}|${h?.fatal ? 1 : 0}|${m?.device ? 1 : 0}|${m?.host ? 1 : 0}`;
}

/** Allowed events by (machine, state facts): see `allowedOf`. */
const ALLOWED_MEMO = new WeakMap<object, Map<string, string[]>>();

/**
 * Operator events an accelerator accepts in `r`, asked of the machine. The answer depends only on
 * the state and a few context facts, so it is memoized by them: listing 10,000 accelerators must
 * not ask the machine 70,000 questions.
 */
export function allowedOf(logic: AcceleratorLogic, r: AcceleratorRecord, freeHandle: string | undefined): string[] {
  const ctx = r.context;
  const free = freeHandle !== undefined;
  const key = `${r.value}|${ctx.allocations.length}|${free}|${ctx.error?.op ?? ''}|${ctx.resume ?? ''}|${ctx.program ? 1 : 0}|${conditionOf(ctx)}`;
  let memo = ALLOWED_MEMO.get(logic);
  if (!memo) ALLOWED_MEMO.set(logic, (memo = new Map()));
  let answer = memo.get(key);
  if (!answer) memo.set(key, (answer = askMachine(logic, r, freeHandle)));
  return answer;
}

function askMachine(logic: AcceleratorLogic, r: AcceleratorRecord, freeHandle: string | undefined): string[] {
  // Asked of the record's state and context, awake or at rest alike: guards are pure.
  const snapshot = logic.resolveState({ value: r.value, context: r.context } as never);
  const ctx = r.context;
  return allowedEvents(snapshot, {
    ENABLE: { type: 'ENABLE' },
    DISABLE: { type: 'DISABLE' },
    PROGRAM: { type: 'PROGRAM' },
    ATTACH: { type: 'ATTACH', handleUuid: freeHandle ?? '', instanceUuid: 'probe' } as AcceleratorEvent,
    DETACH: { type: 'DETACH', handleUuid: ctx.allocations[0]?.handleUuid ?? '' } as AcceleratorEvent,
    RETRY: { type: 'RETRY' },
    // Health and maintenance actions are not listed: the view's `health` and `maintenance` say
    // what they can do, and clients that map `allowed` to lifecycle buttons keep working.
    REMOVE: { type: 'REMOVE' },
  }).filter((t) => t !== 'ATTACH' || freeHandle !== undefined);
}

/** The view's fields that come from discovery (kept per actor, rebuilt when the spec changes). */
export function specFieldsOf(
  spec: AcceleratorSpec,
): Pick<AcceleratorView, 'name' | 'deviceUuid' | 'deviceType' | 'vendor' | 'model' | 'driver' | 'resourceClass' | 'traits' | 'rpUuid' | 'capacity'> {
  const { device, deployable } = spec;
  return {
    name: deployable.name,
    deviceUuid: device.uuid,
    deviceType: device.type,
    vendor: device.vendor,
    model: device.model,
    driver: deployable.driverName,
    resourceClass: deployable.attributes.find((a) => a.key === 'rc')?.value ?? null,
    traits: deployable.attributes.filter((a) => a.key.startsWith('trait')).map((a) => a.value),
    rpUuid: rpUuidOf(deployable),
    capacity: deployable.attachHandles.length,
  };
}

const iso = (ms: number | null | undefined): string | null => (ms ? new Date(ms).toISOString() : null);

export function healthView(ctx: AcceleratorContext): NonNullable<AcceleratorView['health']> {
  const h = ctx.health;
  if (!h) return { status: 'ok', fatal: false, reason: null, since: null };
  return { status: h.status, fatal: h.fatal, reason: h.reason, since: iso(h.since) };
}

/**
 * A device its driver could not observe: what is known of its health is the last verdict, which
 * may be stale, so it reads `unknown` with the driver's reason (a fatal fault stays said).
 */
export function unobservedView(ctx: AcceleratorContext, u: { reason: string; since: number }): NonNullable<AcceleratorView['health']> {
  const fatal = ctx.health?.fatal ?? false;
  return {
    status: 'unknown',
    fatal,
    reason: `not observed: ${u.reason}${fatal && ctx.health?.reason ? ` (last fault: ${ctx.health.reason})` : ''}`,
    since: iso(u.since),
  };
}

/** The mark as an operator reads it: `draining` while instances remain (named), then `maintenance`. */
export function maintenanceView(ctx: AcceleratorContext): AcceleratorView['maintenance'] {
  const m = ctx.maintenance;
  if (!m) return null;
  return {
    mark: ctx.allocations.length > 0 ? 'draining' : 'maintenance',
    scopes: [...(m.device ? ['device' as const] : []), ...(m.host ? ['host' as const] : [])],
    since: iso(m.since),
    consumers: ctx.allocations.map((a) => ({
      instanceUuid: a.instanceUuid,
      ...(a.arqUuid ? { arqUuid: a.arqUuid } : {}),
      ...(a.projectId ? { projectId: a.projectId } : {}),
    })),
  };
}

/** What an accelerator actor keeps beside its machine's record and shows in its view. */
export interface ViewFacts {
  id: string;
  host: string;
  fields: ReturnType<typeof specFieldsOf>;
  unobserved: { reason: string; since: number } | null;
  missing: boolean;
  generation: number;
  updatedAt: string;
}

/**
 * The view of record `r` as the API and the UI show it; `allowed` is left empty by a caller whose
 * `r` is not what the machine holds now (a commit under way: the buttons would lie).
 */
export function acceleratorViewOf(logic: AcceleratorLogic, r: AcceleratorRecord, facts: ViewFacts, allowed: string[]): AcceleratorView {
  const ctx = r.context;
  return {
    id: facts.id,
    host: facts.host,
    ...facts.fields,
    state: r.value as AcceleratorState,
    tags: [...tagsOf(logic, r.value), ...conditionTags(ctx)],
    health: facts.unobserved ? unobservedView(ctx, facts.unobserved) : healthView(ctx),
    maintenance: maintenanceView(ctx),
    allowed,
    allocations: ctx.allocations ?? [],
    program: ctx.program ?? null,
    error: ctx.error ?? null,
    missing: facts.missing,
    generation: facts.generation,
    updatedAt: facts.updatedAt,
  };
}
