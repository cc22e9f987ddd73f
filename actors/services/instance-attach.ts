import { CyborgError, DriverError } from '../../errors/index.js';
import type { AcceleratorView, ArqView, AttachRequest, AttachResult, ControlPlane, DetachResult, RequestMeta } from '../../model/index.js';

/**
 * The spec's attach-instance, routed as Nova's own flow: an ARQ is created and bound to the
 * chosen accelerator's resource provider on its host (conductor → ARQ actor → accelerator
 * attach → agent), so the bind is recorded, tells Nova, and shows in `openstack accelerator
 * arq list` like any other. A failed bind leaves no ARQ behind.
 */
/** Waits until an accelerator's changes are committed (ARQ binds do not wait for it themselves). */
export type Settle = (acceleratorId: string) => Promise<void>;

const noWait: Settle = async () => undefined;

export async function attachInstance(control: ControlPlane, instanceUuid: string, req: AttachRequest, meta: RequestMeta = {}, settle: Settle = noWait): Promise<AttachResult> {
  const { accelerator, profile } = pick(control, req);
  const arq = await control.createArq({ deviceProfileName: profile ?? `operator:${accelerator.resourceClass ?? accelerator.name}`, deviceProfileGroupId: 0, projectId: req.projectId ?? null }, meta);
  const bound = await control.bindArq(arq.uuid, { hostname: accelerator.host, deviceRpUuid: accelerator.rpUuid, instanceUuid, projectId: req.projectId ?? null }, meta);
  if (bound.state !== 'Bound') {
    await control.deleteArq(arq.uuid, meta).catch(() => undefined);
    throw new DriverError('driver.failed', `attaching instance ${instanceUuid} to accelerator ${accelerator.name} failed: ${bound.error ?? bound.state}`, { acceleratorId: accelerator.id, instanceUuid });
  }
  await settle(accelerator.id);
  return { arq: bound, accelerator: control.getAccelerator(accelerator.id) };
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
    if (v.state !== 'Deleted') throw new DriverError('driver.failed', `detaching instance ${instanceUuid}: ARQ ${a.uuid} is ${v.state}: ${v.error ?? 'unbind failed'}`, { arqUuid: a.uuid });
  }
  for (const acc of control.listAccelerators()) {
    for (const alloc of acc.allocations.filter((x) => x.instanceUuid === instanceUuid && !x.arqUuid)) {
      const v = await control.detach(acc.id, { handleUuid: alloc.handleUuid }, meta);
      if (v.state === 'error') throw new DriverError('driver.failed', `detaching instance ${instanceUuid} from ${acc.name} failed: ${v.error?.reason ?? 'unknown reason'}`, { acceleratorId: acc.id });
      touched.add(acc.id);
    }
  }
  await Promise.all([...touched].map((id) => settle(id)));
  return { instanceUuid, arqs: arqs.map((a) => a.uuid), accelerators: [...touched].map((id) => control.getAccelerator(id)) };
}

function pick(control: ControlPlane, req: AttachRequest): { accelerator: AcceleratorView; profile?: string } {
  if (req.acceleratorId) {
    const a = control.getAccelerator(req.acceleratorId);
    if (!a.allowed.includes('ATTACH')) {
      const hint = a.state === 'inactive' ? `enable it first (cyborg accelerator enable ${a.id})` : a.state === 'error' ? `retry or remove it first (cyborg accelerator retry ${a.id})` : 'wait until it is ready or programmed, or pick another';
      throw new CyborgError('accelerator.transition_invalid', `accelerator ${a.name} is ${a.state} and cannot take an instance now: ${hint}`, { id: a.id, state: a.state, allowed: a.allowed });
    }
    return { accelerator: a, ...(req.deviceProfileName ? { profile: req.deviceProfileName } : {}) };
  }
  let rc = req.resourceClass;
  let traits = req.traits ?? [];
  if (req.deviceProfileName) {
    const p = control.documents.profileByName(req.deviceProfileName);
    if (!p) throw new CyborgError('device_profile.not_found', `no device profile named ${req.deviceProfileName} (see: openstack accelerator device profile list)`, { name: req.deviceProfileName });
    const group = p.groups[0] ?? {};
    rc = Object.keys(group).find((k) => k.startsWith('resources:'))?.slice('resources:'.length) ?? rc;
    traits = [...traits, ...Object.entries(group).filter(([k, v]) => k.startsWith('trait:') && v === 'required').map(([k]) => k.slice('trait:'.length))];
  }
  if (!rc) throw new CyborgError('request.invalid', 'name the accelerator to attach: an accelerator id, a resource class, or a device profile');
  const ofClass = control.listAccelerators(req.host ? { host: req.host } : {}).filter((a) => a.resourceClass === rc && traits.every((t) => a.traits.includes(t)));
  const free = ofClass.filter((a) => a.allowed.includes('ATTACH') && !a.missing)
    .sort((a, b) => a.allocations.length - b.allocations.length || a.host.localeCompare(b.host) || a.name.localeCompare(b.name));
  if (free.length === 0) {
    const states = Object.entries(ofClass.reduce<Record<string, number>>((m, a) => ({ ...m, [a.state]: (m[a.state] ?? 0) + 1 }), {})).map(([s, n]) => `${n} ${s}`).join(', ');
    const what = `${rc}${traits.length ? ` with ${traits.join(', ')}` : ''}${req.host ? ` on ${req.host}` : ''}`;
    const inactive = ofClass.find((a) => a.state === 'inactive');
    throw new CyborgError('accelerator.none_available',
      `no accelerator of ${what} can take an instance now (${states || 'none found'})${inactive ? `; enable one first: cyborg accelerator enable ${inactive.id}` : ''}`,
      { resourceClass: rc, traits });
  }
  return { accelerator: free[0]!, ...(req.deviceProfileName ? { profile: req.deviceProfileName } : {}) };
}
