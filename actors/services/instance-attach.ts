import { CyborgError, DriverError } from '../../errors/index.js';
import {
  whyUnavailable,
  type AcceleratorView,
  type ArqView,
  type AttachRequest,
  type AttachResult,
  type ControlPlane,
  type DetachResult,
  type RequestMeta,
} from '../../model/index.js';
import { describe, matchGroups, readGroups, whyNot, type Candidate, type RequestGroup } from '../../placement-query/index.js';
import { AcceleratorStates, ArqStates } from '../../machines/index.js';

/**
 * The spec's attach-instance, routed as Nova's own flow: an ARQ is created and bound to the
 * chosen accelerator's resource provider on its host (conductor → ARQ actor → accelerator
 * attach → agent), so the bind is recorded, tells Nova, and shows in `openstack accelerator
 * arq list` like any other. A failed bind leaves no ARQ behind.
 */
/** Waits until an accelerator's changes are committed (ARQ binds do not wait for it themselves). */
export type Settle = (acceleratorId: string) => Promise<void>;

const noWait: Settle = async () => undefined;

export async function attachInstance(
  control: ControlPlane,
  instanceUuid: string,
  req: AttachRequest,
  meta: RequestMeta = {},
  settle: Settle = noWait,
): Promise<AttachResult> {
  const picks = pick(control, req);
  const bound: ArqView[] = [];
  try {
    // One ARQ per unit each group asks for, as Nova makes them (resources:PGPU=2 is two).
    for (const p of picks) {
      const arq = await control.createArq(
        {
          deviceProfileName: p.profile ?? `operator:${p.accelerator.resourceClass ?? p.accelerator.name}`,
          deviceProfileGroupId: p.group,
          projectId: req.projectId ?? null,
        },
        meta,
      );
      const done = await control.bindArq(
        arq.uuid,
        {
          hostname: p.accelerator.host,
          deviceRpUuid: p.accelerator.rpUuid,
          instanceUuid,
          projectId: req.projectId ?? null,
          ...(req.handleUuid && req.acceleratorId ? { handleUuid: req.handleUuid } : {}),
        },
        meta,
      );
      bound.push(done);
      if (done.state !== ArqStates.Bound) {
        throw new DriverError('driver.failed', `attaching instance ${instanceUuid} to accelerator ${p.accelerator.name} failed: ${done.error ?? done.state}`, {
          acceleratorId: p.accelerator.id,
          instanceUuid,
        });
      }
    }
  } catch (err) {
    // A failed bind leaves no ARQ behind, the ones bound before it in this request included.
    for (const a of bound) await control.deleteArq(a.uuid, meta).catch(() => undefined);
    throw err;
  }
  const ids = [...new Set(picks.map((p) => p.accelerator.id))];
  await Promise.all(ids.map((id) => settle(id)));
  return {
    arq: bound[0]!,
    accelerator: control.getAccelerator(picks[0]!.accelerator.id),
    ...(bound.length > 1 ? { arqs: bound, accelerators: ids.map((id) => control.getAccelerator(id)) } : {}),
  };
}

/**
 * The spec's detach-instance: deletes the instance's ARQs (each unbinds first, as when Nova
 * deletes a server) and detaches what an operator attached directly. Detaching an instance that
 * holds nothing is not an error: scripts may retry it.
 */
export async function detachInstance(control: ControlPlane, instanceUuid: string, meta: RequestMeta = {}, settle: Settle = noWait): Promise<DetachResult> {
  const arqs = control.listArqs({ instanceUuid });
  const touched = new Set<string>();
  for (const a of arqs) {
    if (a.boundTo) touched.add(a.boundTo.acceleratorId);
    const v = await control.deleteArq(a.uuid, meta);
    if (v.state !== ArqStates.Deleted)
      throw new DriverError('driver.failed', `detaching instance ${instanceUuid}: ARQ ${a.uuid} is ${v.state}: ${v.error ?? 'unbind failed'}`, {
        arqUuid: a.uuid,
      });
  }
  for (const acc of control.listAccelerators()) {
    for (const alloc of acc.allocations.filter((x) => x.instanceUuid === instanceUuid && !x.arqUuid)) {
      const v = await control.detach(acc.id, { handleUuid: alloc.handleUuid }, meta);
      if (v.state === AcceleratorStates.error)
        throw new DriverError('driver.failed', `detaching instance ${instanceUuid} from ${acc.name} failed: ${v.error?.reason ?? 'unknown reason'}`, {
          acceleratorId: acc.id,
        });
      touched.add(acc.id);
    }
  }
  await Promise.all([...touched].map((id) => settle(id)));
  return { instanceUuid, arqs: arqs.map((a) => a.uuid), accelerators: [...touched].map((id) => control.getAccelerator(id)) };
}

interface Pick {
  accelerator: AcceleratorView;
  /** The profile group it serves (0 without a profile). */
  group: number;
  profile?: string;
}

/**
 * What to attach: the accelerator named, or what the device profile (every request group, its
 * required and forbidden traits, every resources: key, `groupPolicy`) or the resource class and
 * traits select among the accelerators that can take an instance now, with the same semantics
 * Placement applies to Nova's requests (placement-query/).
 */
function pick(control: ControlPlane, req: AttachRequest): Pick[] {
  if (req.handleUuid && !req.acceleratorId)
    throw new CyborgError('request.invalid', 'handleUuid names a handle of one accelerator: give its acceleratorId too', { field: 'handleUuid' });
  if (req.acceleratorId) {
    const a = control.getAccelerator(req.acceleratorId);
    const refused = whyUnavailable(a);
    if (refused || !a.allowed.includes('ATTACH')) {
      // The cause (drain, mark, quarantine, handles held, state) and the way out, not only the state.
      throw new CyborgError('accelerator.transition_invalid', refused ?? `accelerator ${a.name} is ${a.state} and cannot take an instance now`, {
        id: a.id,
        state: a.state,
        allowed: a.allowed,
      });
    }
    return [{ accelerator: a, group: 0, ...(req.deviceProfileName ? { profile: req.deviceProfileName } : {}) }];
  }
  let groups: RequestGroup[];
  if (req.deviceProfileName) {
    const p = control.documents.profileByName(req.deviceProfileName);
    if (!p)
      throw new CyborgError('device_profile.not_found', `no device profile named ${req.deviceProfileName} (see: openstack accelerator device profile list)`, {
        name: req.deviceProfileName,
      });
    groups = readGroups(p.groups);
  } else {
    if (!req.resourceClass)
      // Any one of three fields would do: the first is named, as a client reads `field` to point at one.
      throw new CyborgError('request.invalid', 'name the accelerator to attach: an accelerator id, a resource class, or a device profile', {
        field: 'acceleratorId',
        oneOf: ['acceleratorId', 'resourceClass', 'deviceProfileName'],
      });
    groups = readGroups([{ [`resources:${req.resourceClass}`]: '1', ...Object.fromEntries((req.traits ?? []).map((t) => [`trait:${t}`, 'required'])) }]);
  }
  const all = control.listAccelerators(req.host ? { host: req.host } : {});
  const free = all
    .filter((a) => a.allowed.includes('ATTACH') && !a.missing)
    .sort((a, b) => a.allocations.length - b.allocations.length || a.host.localeCompare(b.host) || a.name.localeCompare(b.name));
  const candidates: Candidate[] = free
    .filter((a) => a.resourceClass)
    .map((a) => ({ id: a.id, free: new Map([[a.resourceClass!, a.capacity - a.allocations.length]]), traits: a.traits }));
  const found = matchGroups(groups, candidates, req.groupPolicy ?? 'none');
  if ('reasons' in found) throw noneAvailable(req, groups, all, new Set(free.map((a) => a.id)), found.reasons);
  const byId = new Map(free.map((a) => [a.id, a]));
  return groups.flatMap((g, i) => {
    const accelerator = byId.get(found.assignment[i]!)!;
    const units = [...g.resources.values()].reduce((n, v) => n + v, 0);
    return Array.from({ length: units }, () => ({ accelerator, group: g.index, ...(req.deviceProfileName ? { profile: req.deviceProfileName } : {}) }));
  });
}

/**
 * Why nothing of what `req` asks can take an instance now: the cards of that kind by state, why
 * each one that is not a candidate is unavailable (a drained host, a maintenance mark, a
 * quarantine: whyUnavailable's cause and way out), and why the candidates do not fit. "no
 * candidates" alone said nothing of the drain an operator had forgotten (issue 42).
 */
function noneAvailable(req: AttachRequest, groups: RequestGroup[], all: AcceleratorView[], candidates: Set<string>, reasons: string[]): CyborgError {
  const wanted = new Set(groups.flatMap((g) => [...g.resources.keys()]));
  // Those a group would take if they were free and usable: where the profile's devices are now.
  const whole = (a: AcceleratorView): Candidate => ({ id: a.id, free: new Map([[a.resourceClass!, Math.max(1, a.capacity)]]), traits: a.traits });
  const ofClass = all.filter((a) => a.resourceClass && groups.some((g) => whyNot(g, whole(a)) === null));
  const states = Object.entries(ofClass.reduce<Record<string, number>>((m, a) => ({ ...m, [a.state]: (m[a.state] ?? 0) + 1 }), {}))
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');
  const asked = req.deviceProfileName
    ? `profile ${req.deviceProfileName} (${groups.map(describe).join(' | ')})`
    : `${req.resourceClass}${req.traits?.length ? ` with ${req.traits.join(', ')}` : ''}`;
  const what = `${asked}${req.host ? ` on ${req.host}` : ''}`;
  const out = ofClass.filter((a) => !candidates.has(a.id)).map((a) => whyUnavailable(a) ?? `accelerator ${a.name} on ${a.host} is ${a.state}`);
  const why = [...(candidates.size > 0 ? reasons : []), ...out.slice(0, 3), ...(out.length > 3 ? [`… ${out.length - 3} more`] : [])];
  const inactive = ofClass.find((a) => a.state === AcceleratorStates.inactive);
  return new CyborgError(
    'accelerator.none_available',
    `no accelerator of ${what} can take an instance now (${states || 'none found'})${ofClass.length > 0 && why.length > 0 ? `: ${why.join('; ')}` : ''}${inactive ? `; enable one first: cyborg accelerator enable ${inactive.id}` : ''}`,
    { resourceClass: [...wanted].join(','), traits: [...new Set(groups.flatMap((g) => [...g.required]))] },
  );
}
