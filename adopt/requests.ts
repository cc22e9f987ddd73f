import { ArqStates, type ArqContext, type ArqState, type Binding } from '../machines/index.js';
import { BOUND } from '../model/index.js';
import type { AdoptedInventory } from './inventory.js';
import type { CyborgData } from './read.js';
import { RowReader } from './rows.js';
import type { Tally } from './tally.js';

export interface AdoptedProfile {
  uuid: string;
  name: string;
  description: string | null;
  groups: Record<string, string>[];
  createdAt: string;
  updatedAt: string | null;
}

export interface AdoptedArq {
  uuid: string;
  cyborgState: string;
  state: ArqState;
  context: ArqContext & { createdAt: string };
  /** The handle it holds (Bound, or Deleting with one): an allocation on that accelerator. */
  holds: { acceleratorId: string; handleUuid: string; instanceUuid: string } | null;
}

/** What the target holds already, as far as profiles and ARQs go. */
export interface TargetRequests {
  profiles: Map<string, { name: string; groups: unknown }>;
  arqs: Set<string>;
}

const CYBORG_ARQ_STATES = ['Initial', 'BindStarted', 'Bound', 'BindFailed', 'Unbound', 'UnbindFailed', 'Deleting'] as const;

/** Device profiles: every row read with our bounds; one whose name is taken here by other groups skipped. */
export function adoptProfiles(
  data: CyborgData,
  target: TargetRequests,
  tally: Tally,
): { adopted: AdoptedProfile[]; byId: Map<number, { name: string; skipped?: string }> } {
  const byName = new Map([...target.profiles].map(([uuid, p]) => [p.name, { uuid, groups: p.groups }]));
  const adopted: AdoptedProfile[] = [];
  const byId = new Map<number, { name: string; skipped?: string }>();
  for (const r of data.rows.device_profiles) {
    const f: RowReader = new RowReader('device_profiles', r);
    const id = f.int('id');
    const p: AdoptedProfile = {
      uuid: f.uuid('uuid'),
      name: f.text('name'),
      description: f.textOrNull('description', BOUND.text),
      groups: groupsOf(f),
      createdAt: f.time('created_at'),
      updatedAt: f.timeOrNull('updated_at'),
    };
    if (target.profiles.has(p.uuid)) {
      tally.device_profiles.already++;
      byId.set(id, { name: p.name });
      continue;
    }
    const same = byName.get(p.name);
    if (same && JSON.stringify(same.groups) !== JSON.stringify(p.groups)) {
      const why = `a profile named ${p.name} exists here (${same.uuid}) with other groups`;
      tally.device_profiles.skipped.push({ row: f.name, why });
      byId.set(id, { name: p.name, skipped: why });
      continue;
    }
    if (same) {
      tally.device_profiles.skipped.push({ row: f.name, why: `a profile named ${p.name} with the same groups exists here as ${same.uuid}` });
      byId.set(id, { name: p.name });
      continue;
    }
    byId.set(id, { name: p.name });
    adopted.push(p);
    tally.device_profiles.imported++;
  }
  return { adopted, byId };
}

/** `profile_json`: Cyborg's `{"groups": [{"resources:FPGA": "1", …}, …]}`. */
function groupsOf(f: RowReader): Record<string, string>[] {
  const text = f.text('profile_json', BOUND.text);
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch {
    return f.fail('profile_json is not JSON');
  }
  const groups = (j as { groups?: unknown }).groups;
  if (!Array.isArray(groups) || groups.length === 0 || groups.length > 64) return f.fail('profile_json has no list of 1 to 64 groups');
  for (const g of groups) {
    if (typeof g !== 'object' || g === null || Array.isArray(g) || Object.values(g).some((v) => typeof v !== 'string'))
      return f.fail('profile_json has a group that is not an object of strings');
  }
  return groups as Record<string, string>[];
}

/**
 * ARQs in every state, onto our machine's: Initial, Bound, BindFailed, Unbound and UnbindFailed
 * as they are; a bind under way (BindStarted) as our crash recovery leaves one, BindFailed
 * "interrupted"; a delete under way (Deleting) as our acknowledged delete that is still to
 * finish (DeletePending: the conductor's reconciliation completes it).
 */
export function adoptArqs(
  data: CyborgData,
  inventory: AdoptedInventory,
  profiles: Map<number, { name: string; skipped?: string }>,
  target: TargetRequests,
  tally: Tally,
): AdoptedArq[] {
  const out: AdoptedArq[] = [];
  for (const r of data.rows.extended_accelerator_requests) {
    const f: RowReader = new RowReader('extended_accelerator_requests', r);
    const uuid = f.uuid('uuid');
    const cyborgState = f.oneOf('state', CYBORG_ARQ_STATES);
    const profileId = f.intOrNull('device_profile_id');
    const group = f.int('device_profile_group_id');
    const binding = bindingOf(f);
    const handleId = f.intOrNull('attach_handle_id');
    const createdAt = f.time('created_at');
    const profile = profileId === null ? undefined : profiles.get(profileId);
    if (!profile) f.fail(`device_profile_id ${String(profileId)} names no device profile`);
    if (target.arqs.has(uuid)) {
      tally.accelerator_requests.already++;
      continue;
    }
    if (profile.skipped) {
      tally.accelerator_requests.skipped.push({ row: f.name, why: `its device profile is skipped: ${profile.skipped}` });
      continue;
    }
    let holds: AdoptedArq['holds'] = null;
    if (handleId !== null) {
      const h = inventory.handleRows.get(handleId);
      if (!h) f.fail(`attach_handle_id ${handleId} names no attach handle`);
      if (h.skipped) {
        tally.accelerator_requests.skipped.push({
          row: f.name,
          why: `the attach handle it holds (attach_handles row id ${handleId}) is not adopted: ${h.skipped}`,
        });
        continue;
      }
      const dep = inventory.byDeployableId.get(h.deployableId)!;
      if (!binding) f.fail(`holds attach handle ${handleId} but has no hostname, device_rp_uuid and instance_uuid`);
      holds = { acceleratorId: dep.id, handleUuid: dep.handles.get(handleId)!, instanceUuid: binding.instanceUuid };
    }
    if (cyborgState === ArqStates.Bound && !holds) f.fail('is Bound but holds no attach handle');
    const base: ArqContext = {
      uuid,
      deviceProfileName: profile.name,
      deviceProfileGroupId: group,
      projectId: f.textOrNull('project_id'),
      binding: null,
      boundTo: null,
      error: null,
    };
    const adopted = mapState(cyborgState, base, binding, holds);
    out.push({ uuid, cyborgState, state: adopted.state, context: { ...adopted.context, createdAt }, holds: adopted.holds });
    tally.accelerator_requests.imported++;
  }
  return out;
}

function mapState(
  cyborg: (typeof CYBORG_ARQ_STATES)[number],
  base: ArqContext,
  binding: Binding | null,
  holds: AdoptedArq['holds'],
): { state: ArqState; context: ArqContext; holds: AdoptedArq['holds'] } {
  const boundTo = holds ? { acceleratorId: holds.acceleratorId, handleUuid: holds.handleUuid } : null;
  switch (cyborg) {
    case ArqStates.Initial:
      return { state: ArqStates.Initial, context: base, holds: null };
    case ArqStates.Bound:
      return { state: ArqStates.Bound, context: { ...base, binding, boundTo }, holds };
    case ArqStates.BindStarted:
      return {
        state: ArqStates.BindFailed,
        context: { ...base, binding, boundTo, error: 'interrupted: a bind under way in OpenStack Cyborg when it was adopted' },
        holds,
      };
    case ArqStates.BindFailed:
      return { state: ArqStates.BindFailed, context: { ...base, binding, boundTo, error: 'the bind failed in OpenStack Cyborg' }, holds };
    case ArqStates.Unbound:
      return { state: ArqStates.Unbound, context: base, holds: null };
    case ArqStates.UnbindFailed:
      return { state: ArqStates.UnbindFailed, context: { ...base, binding, boundTo, error: 'the unbind failed in OpenStack Cyborg' }, holds };
    case ArqStates.Deleting:
      return {
        state: ArqStates.DeletePending,
        context: { ...base, binding, boundTo, error: 'a delete under way in OpenStack Cyborg when it was adopted' },
        holds,
      };
  }
}

/** hostname, device_rp_uuid and instance_uuid together (what Nova's bind sets), or none of them. */
function bindingOf(f: RowReader): Binding | null {
  const hostname = f.textOrNull('hostname');
  const deviceRpUuid = f.uuidOrNull('device_rp_uuid');
  const instanceUuid = f.uuidOrNull('instance_uuid');
  const projectId = f.textOrNull('project_id');
  if (hostname === null || deviceRpUuid === null || instanceUuid === null) return null;
  return { hostname, deviceRpUuid, instanceUuid, projectId };
}
