import { CyborgError, NotFoundError } from '../../errors/index.js';
import type { AcceleratorView, RelayoutRequest, RequestMeta } from '../../model/index.js';
import type { Journal } from '../runtime/index.js';
import { assertNotAllocated, type ProviderAllocations } from '../services/index.js';
import type { HostActor } from './host-actor.js';
import { pciAddressOf } from './rejoin-plan.js';

/**
 * Re-lays out one card of a host (MIG instances, VF count) through its driver: refused while any
 * of the card's accelerators is allocated, in Cyborg's records or in Placement (Nova may hold one
 * not bound yet); the change is audited against the host.
 */
export async function relayout(
  host: HostActor,
  req: RelayoutRequest,
  meta: RequestMeta,
  deps: { journal: Journal; allocations: ProviderAllocations | null },
): Promise<AcceleratorView[]> {
  const card = host.inventory().find((d) => pciAddressOf(d.controlPath.info) === req.address.toLowerCase());
  if (!card) throw new NotFoundError('accelerator.not_found', `${host.name} has no card at ${req.address}`);
  const accelerators = card.deployables.map((d) => host.accelerators.get(d.uuid)).filter((a) => a !== undefined);
  const action = req.kind === 'mig' ? 'APPLY_MIG_LAYOUT' : 'SET_VF_COUNT';
  for (const a of accelerators) {
    const consumers = a.context.allocations.map((x) => x.instanceUuid);
    if (consumers.length > 0) {
      throw new CyborgError(
        'accelerator.allocated',
        `accelerator ${a.id} is attached to instance ${consumers.join(', ')}: the re-layout of ${req.address} is refused until it is detached`,
        { acceleratorId: a.id, action, consumers },
      );
    }
    await assertNotAllocated(deps.allocations, a, action);
  }
  const target = accelerators[0];
  if (!target) throw new NotFoundError('accelerator.not_found', `no accelerator of ${host.name} is on the card at ${req.address}`);
  const params = req.kind === 'mig' ? { address: req.address, profiles: req.profiles } : { address: req.address, count: req.count };
  await host.runOp({ op: req.kind === 'mig' ? 'mig_layout' : 'vf_count', params, id: target.id, host: host.name, seq: Date.now() });
  const args: Record<string, string | number> =
    req.kind === 'mig' ? { address: req.address, profiles: req.profiles.join(',') } : { address: req.address, count: req.count };
  await deps.journal.commit([
    {
      type: 'transition',
      record: {
        kind: 'host',
        id: host.name,
        host: host.name,
        event: action,
        from: host.state,
        to: host.state,
        at: new Date().toISOString(),
        args,
        ...(meta.actor ? { actor: meta.actor } : {}),
        ...(meta.requestId ? { requestId: meta.requestId } : {}),
        ...(meta.projectId ? { projectId: meta.projectId } : {}),
        ...(meta.actorName ? { actorName: meta.actorName } : {}),
        ...(meta.projectName ? { projectName: meta.projectName } : {}),
      },
    },
  ]);
  return [...host.accelerators.values()].map((a) => a.view());
}
