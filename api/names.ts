import type { FastifyInstance, FastifyRequest } from 'fastify';
import { KeystoneDirectory } from '../openstack/keystone/index.js';
import type { AcceleratorView, AuditQuery, TransitionRecord } from '../model/index.js';
import type { AuthSettings } from './auth/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Keystone's names of users and projects (keystone mode), or null: the ids stand alone. */
    names: KeystoneDirectory | null;
  }
}

/**
 * People and projects by name, for those who read the fleet: in keystone mode the api asks
 * Keystone (with its service user, cached) for the names of the projects that hold cards and for
 * the ids of a user or project named in an audit filter. In noauth mode there is no directory:
 * the names are those the audit rows kept.
 */
export function installNames(app: FastifyInstance, auth: AuthSettings): void {
  const k = auth.strategy === 'keystone' ? auth.keystone : undefined;
  app.decorate('names', k ? new KeystoneDirectory({ session: k.validator.session }) : null);
}

/** The views with the names of the projects that hold them or wait in their drain (`projectNames`), where Keystone knows them. */
export async function withProjectNames(req: Pick<FastifyRequest, 'server'>, views: AcceleratorView[]): Promise<AcceleratorView[]> {
  const names = req.server.names;
  if (!names) return views;
  const ids = views.flatMap((v) => [...v.allocations.map((a) => a.projectId), ...(v.maintenance?.consumers ?? []).map((c) => c.projectId)]);
  const known = await names.projectNames(ids.filter((id): id is string => id !== undefined));
  return views.map((v) => {
    const own = Object.fromEntries(Object.entries(known).filter(([id]) => holds(v, id)));
    return Object.keys(own).length ? { ...v, projectNames: own } : v;
  });
}

function holds(v: AcceleratorView, projectId: string): boolean {
  return v.allocations.some((a) => a.projectId === projectId) || !!v.maintenance?.consumers.some((c) => c.projectId === projectId);
}

/**
 * An audit query whose user or project, given as a name, also matches the ids Keystone has for
 * it: the rows keep the ids a token gave, and a row written without the name (before names were
 * kept, or by a token that had none) is found by the name an operator types.
 */
export async function withKeystoneIds(req: Pick<FastifyRequest, 'server'>, q: AuditQuery, fleet: boolean): Promise<AuditQuery> {
  const names = req.server.names;
  if (!names) return q;
  const [actorIds, projectIds] = await Promise.all([
    q.actor === undefined ? [] : names.userIds(q.actor),
    // A project-scoped caller's project is its own id already: a name widens nothing there.
    q.projectId === undefined || !fleet ? [] : names.projectIds(q.projectId),
  ]);
  const out = { ...q };
  if (actorIds.length) out.actorIds = actorIds;
  if (projectIds.length) out.projectIds = projectIds;
  return out;
}

/** Keystone's ids (32 hex digits, or a uuid from an LDAP or federated backend): the actors worth asking about. */
const KEYSTONE_ID = /^(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

/**
 * Rows of the log with the user's and project's names where the row kept only the ids (written
 * before names were kept, or by a token without them) and Keystone knows them; `agent:…`,
 * `conductor` and the like are not Keystone's and stay as they are.
 */
export async function withPeopleNames<T extends TransitionRecord>(req: Pick<FastifyRequest, 'server'>, rows: T[]): Promise<T[]> {
  const names = req.server.names;
  if (!names) return rows;
  const users = [...new Set(rows.flatMap((r) => (r.actorName === undefined && r.actor && KEYSTONE_ID.test(r.actor) ? [r.actor] : [])))];
  const projects = rows.flatMap((r) => (r.projectName === undefined && r.projectId ? [r.projectId] : []));
  if (users.length === 0 && projects.length === 0) return rows;
  const [userNames, projectNames] = await Promise.all([Promise.all(users.map((u) => names.userName(u))), names.projectNames(projects)]);
  const byUser = new Map(users.map((u, i) => [u, userNames[i]]));
  return rows.map((r) => {
    const actorName = r.actorName ?? (r.actor ? byUser.get(r.actor) : undefined);
    const projectName = r.projectName ?? (r.projectId ? projectNames[r.projectId] : undefined);
    if (actorName === r.actorName && projectName === r.projectName) return r;
    return { ...r, ...(actorName ? { actorName } : {}), ...(projectName ? { projectName } : {}) };
  });
}
