import type { FastifyRequest } from 'fastify';
import { NotFoundError } from '../errors/index.js';
import type { AcceleratorView, ArqView, AuditQuery, ControlPlane, HostUsage, HostView, TransitionRecord } from '../model/index.js';
import { allowed } from './auth/index.js';

/**
 * Tenancy of the operator API, in one place. A caller that passes `cyborg:operator:scope:fleet`
 * (an admin or a system-scoped reader by default; policy.yaml may change it) reads the whole
 * fleet. Any other caller reads only what belongs to its project — its instances' allocations,
 * its ARQs, their usage and its audit rows — on the routes that are not fleet-wide by nature
 * (those are refused by their own rule: hosts, drivers, services, the fleet's accelerators).
 * Every filtered read and the event stream go through a {@link Scope}; a route never filters by
 * itself.
 */
export interface Scope {
  /** True: nothing is filtered. */
  readonly fleet: boolean;
  /** The caller's project (null for a fleet caller, or a token scoped to no project: it sees nothing). */
  readonly projectId: string | null;
  /** The accelerator as this caller may see it (only its project's allocations and consumers), or undefined. */
  accelerator(view: AcceleratorView): AcceleratorView | undefined;
  arq(view: ArqView): ArqView | undefined;
  host(view: HostView): HostView | undefined;
  /** A host's usage, with only the devices the caller may see. */
  hostUsage(control: ControlPlane, usage: HostUsage): HostUsage;
  /**
   * The audit query narrowed to the caller's rows; `asked` is the `?project=` the caller gave (an
   * id or a name). Undefined when it asked for another project's rows: there is nothing to show.
   */
  audit(query: AuditQuery, asked?: string): AuditQuery | undefined;
  /** An accelerator id the caller may not see is answered as one that does not exist. */
  requireAccelerator(control: ControlPlane, id: string): AcceleratorView;
  /** Whether the caller may read the history of this ARQ, accelerator or host (an unknown id: no). */
  seesHistoryOf(control: ControlPlane, id: string): boolean;
  /** A transition as this caller may see it: someone else's action without who, why or with what. */
  redact<T extends TransitionRecord>(t: T): T;
}

/** The caller's scope, decided by the policy in force (the identity was set by the route's policy hook). */
export function scopeOf(req: Pick<FastifyRequest, 'identity' | 'server'>): Scope {
  const auth = req.server.cyborgAuth;
  if (allowed('cyborg:operator:scope:fleet', req.identity, auth)) return FLEET;
  return projectScope(req.identity.projectId, req.identity.projectName ?? null);
}

const FLEET: Scope = {
  fleet: true,
  projectId: null,
  accelerator: (v) => v,
  arq: (v) => v,
  host: (v) => v,
  hostUsage: (_c, u) => u,
  audit: (q, asked) => (asked === undefined ? q : { ...q, projectId: asked }),
  requireAccelerator: (control, id) => control.getAccelerator(id),
  seesHistoryOf: () => true,
  redact: (t) => t,
};

function quietly<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/** What one project may see (null: a token scoped to no project sees nothing). */
export function projectScope(projectId: string | null, projectName: string | null = null): Scope {
  const mine = (p: string | null | undefined): boolean => projectId !== null && p === projectId;
  const accelerator = (v: AcceleratorView): AcceleratorView | undefined => {
    const allocations = v.allocations.filter((a) => mine(a.projectId));
    if (allocations.length === 0) return undefined;
    const out: AcceleratorView = { ...v, allocations };
    if (v.maintenance) out.maintenance = { ...v.maintenance, consumers: v.maintenance.consumers.filter((c) => mine(c.projectId)) };
    return out;
  };
  const arq = (v: ArqView): ArqView | undefined => (mine(v.projectId) ? v : undefined);
  return {
    fleet: false,
    projectId,
    accelerator,
    arq,
    host: () => undefined,
    hostUsage: (control, u) => ({ host: u.host, devices: u.devices.filter((d) => quietly(() => accelerator(control.getAccelerator(d.accelerator)))) }),
    audit: (q, asked) => {
      if (projectId === null || (asked !== undefined && asked !== projectId && asked !== projectName)) return undefined;
      return { ...q, projectId };
    },
    requireAccelerator: (control, id) => {
      const seen = accelerator(control.getAccelerator(id));
      if (!seen) throw new NotFoundError('accelerator.not_found', id);
      return seen;
    },
    seesHistoryOf: (control, id) =>
      quietly(() => arq(control.getArq(id))) !== undefined || quietly(() => accelerator(control.getAccelerator(id))) !== undefined,
    redact: (t) => {
      if (t.projectId === projectId) return t;
      const { actor: _a, actorName: _an, projectId: _p, projectName: _pn, requestId: _r, reason: _why, args: _args, ...rest } = t;
      return rest as typeof t;
    },
  };
}

/**
 * The event stream's filter for one client: which committed events it is sent, and the views
 * beside them. Stateful, because a project's ARQ or accelerator may leave its scope (deleted,
 * detached): the client that saw it is told it is gone (view null) without being told by whom.
 */
export class EventScope {
  private readonly arqs = new Set<string>();
  private readonly accelerators = new Set<string>();

  constructor(
    readonly scope: Scope,
    private readonly control: ControlPlane,
  ) {
    if (scope.fleet) return;
    for (const a of control.listArqs()) if (scope.arq(a)) this.arqs.add(a.uuid);
    for (const a of control.listAccelerators()) if (scope.accelerator(a)) this.accelerators.add(a.id);
  }

  /** The event as this client may see it, or undefined. Someone else's action is shown without who, why or with what. */
  event<E extends TransitionRecord>(ev: E): E | undefined {
    if (this.scope.fleet) return ev;
    if (ev.kind === 'arq') {
      if (!this.track(this.arqs, ev.id, () => this.scope.arq(this.control.getArq(ev.id)) !== undefined)) return undefined;
    } else if (ev.kind === 'accelerator') {
      if (!this.track(this.accelerators, ev.id, () => this.scope.accelerator(this.control.getAccelerator(ev.id)) !== undefined)) return undefined;
    } else return undefined;
    return this.scope.redact(ev);
  }

  accelerator(view: AcceleratorView | null): AcceleratorView | null {
    return view === null ? null : (this.scope.accelerator(view) ?? null);
  }

  arq(view: ArqView | null): ArqView | null {
    return view === null ? null : (this.scope.arq(view) ?? null);
  }

  host(view: HostView | null): HostView | null {
    return view === null ? null : (this.scope.host(view) ?? null);
  }

  /** Whether the object is in scope now, or was (its last event then says it left); remembered either way. */
  private track(known: Set<string>, id: string, visible: () => boolean): boolean {
    // Gone (a read that throws): only a client that saw it hears of it.
    if (quietly(visible) === true) {
      known.add(id);
      return true;
    }
    return known.delete(id);
  }
}
