import type { Logger } from 'pino';
import { CyborgError } from '../../errors/index.js';
import type { AcceleratorView, EventHub, HostView, OperatorEvent, PlacementStatusView, RequestMeta, TransitionRecord } from '../../model/index.js';
import type { Journal } from '../runtime/index.js';
import { AcceleratorStates, HOST_DELETED, HostStates } from '../../machines/index.js';

/** What retiring a host needs of the conductor (the all-in-one passes the Conductor itself). */
export interface RetireTarget {
  readonly hub: EventHub;
  getHost(name: string): HostView;
  listAccelerators(filter?: { host?: string }): AcceleratorView[];
  act(id: string, event: OperatorEvent, meta?: RequestMeta): Promise<AcceleratorView>;
  /** Stops and forgets the host's actors (the conductor's `releaseHost`). */
  releaseHost(name: string): boolean;
  /** Where a Placement sync runs: an accelerator's provider state (the removal deletes it). */
  placementStatus?(id: string): PlacementStatusView | undefined;
}

/** How long the removals' provider deletions are waited for before the host's actors go. */
const PLACEMENT_WAIT_MS = 30_000;

/** A journal that can forget a host (MemoryJournal, the PostgreSQL one). */
export type ForgettingJournal = Pick<Journal, 'commit'> & { forgetHost(host: string): Promise<void> };

export interface RetiredHost {
  host: string;
  accelerators: string[];
}

/**
 * Retires a compute host that is gone for good: only one whose agent is lost and that holds no
 * instance (else 409 `host.in_service`, naming why and the way out; nothing changed). Each of its
 * accelerators is removed first — committed and audited like any removal, so the Placement sync
 * deletes their providers and the metrics drop their series — then the host is forgotten by the
 * conductor and the journal, and a `DELETE` row for the host records who did it. An agent that
 * comes back under that name registers as a new host.
 */
export async function retireHost(target: RetireTarget, journal: ForgettingJournal, name: string, meta: RequestMeta, log: Logger): Promise<RetiredHost> {
  const host = target.getHost(name); // 404 for a host nobody knows
  if (host.state !== HostStates.lost) {
    throw new CyborgError(
      'host.in_service',
      `host ${name} is ${host.state}: only a host whose agent is lost can be deleted; stop its agent (systemctl stop cyborg-agent) and wait until it is lost, or drain it instead`,
      { host: name, state: host.state, field: 'host' },
    );
  }
  const accs = target.listAccelerators({ host: name });
  const held = accs.filter((a) => a.allocations.length > 0);
  if (held.length > 0) {
    const who = held.map((a) => `${a.name}: ${a.allocations.map((x) => x.instanceUuid).join(', ')}`).join('; ');
    throw new CyborgError(
      'host.in_service',
      `host ${name} still holds instances (${who}): release them from its dead cards first (cyborg accelerator release <accelerator> --instance <uuid>)`,
      { host: name, held: held.map((a) => a.id), field: 'host' },
    );
  }
  const removed: string[] = [];
  const since = Date.now();
  for (const a of accs) {
    if (a.state !== AcceleratorStates.removed) await target.act(a.id, { type: 'REMOVE' }, meta);
    removed.push(a.id);
  }
  // The sync deletes each removed accelerator's provider; once the actors are released it no
  // longer knows them, so their deletion is waited for here (bounded: Placement may be away).
  const left = await placementSettled(target, removed, since);
  if (left.length > 0)
    log.warn(
      { host: name, accelerators: left },
      'host delete: Placement did not confirm these providers deleted in time; delete them by hand (openstack resource provider delete)',
    );
  target.releaseHost(name);
  await journal.forgetHost(name);
  const record: TransitionRecord = {
    kind: 'host',
    id: name,
    host: name,
    event: 'DELETE',
    from: host.state,
    to: HOST_DELETED,
    at: new Date().toISOString(),
    ...meta,
    args: { accelerators: removed.length },
  };
  await journal.commit([{ type: 'transition', record }]);
  target.hub.publish(record);
  log.warn(
    { host: name, accelerators: removed.length, actor: meta.actor, requestId: meta.requestId },
    'host deleted: its accelerators removed, its records forgotten',
  );
  return { host: name, accelerators: removed };
}

/** The removed accelerators whose provider deletion the Placement sync has not confirmed by the deadline. */
async function placementSettled(target: RetireTarget, ids: string[], since: number): Promise<string[]> {
  if (!target.placementStatus) return [];
  const pending = (): string[] =>
    ids.filter((id) => {
      const s = target.placementStatus!(id);
      return s !== undefined && !(s.status === 'in_sync' && s.syncedAt !== null && Date.parse(s.syncedAt) >= since);
    });
  const deadline = Date.now() + PLACEMENT_WAIT_MS;
  let left = pending();
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = pending();
  }
  return left;
}
