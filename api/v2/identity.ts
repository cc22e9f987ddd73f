import type { FastifyRequest } from 'fastify';
import { v2Error } from './errors.js';

/** Who is calling, as Keystone (or noauth) tells it. */
export interface Identity {
  userId: string | null;
  projectId: string | null;
  /** Roles with Keystone's implied roles expanded (admin ⇒ manager ⇒ member ⇒ reader). */
  roles: Set<string>;
  /** Roles of the service token (X-Service-Roles), empty without one. */
  serviceRoles: Set<string>;
  /** Cyborg's `context.is_admin`: `admin` among the roles. */
  isAdmin: boolean;
  /** A system-scoped token: every Cyborg rule is project-scoped, so it is refused. */
  systemScoped: boolean;
}

export interface AuthSettings {
  strategy: 'noauth' | 'keystone';
  serviceTokenRequired: boolean;
  serviceTokenRoles: string[];
  enforceNewDefaults: boolean;
}

const IMPLIED: Record<string, string[]> = { admin: ['manager', 'member', 'reader'], manager: ['member', 'reader'], member: ['reader'] };

function expand(roles: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const r of roles) {
    const role = r.trim().toLowerCase();
    if (!role) continue;
    out.add(role);
    for (const implied of IMPLIED[role] ?? []) out.add(implied);
  }
  return out;
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? v.join(',') : undefined;
}

/**
 * Placement's `noauth2` reading of a bare token: `admin` or `admin:<project>` is an admin,
 * `<user>:<project>` a member of that project.
 */
export function fromNoauthToken(token: string): { userId: string; projectId: string; roles: string[] } {
  const [user = '', project] = token.split(':', 2);
  if (user === 'admin') return { userId: 'admin', projectId: project || 'admin', roles: ['admin'] };
  return { userId: user, projectId: project || user, roles: ['member'] };
}

/**
 * The seam for identity. In `noauth` the Keystone headers are trusted as given, and a bare
 * `X-Auth-Token` stands in for them when there are none. In `keystone` mode only headers that
 * keystonemiddleware confirmed (`X-Identity-Status: Confirmed`) count; validating tokens here
 * ourselves can come later behind this same function.
 */
export function identify(req: FastifyRequest, auth: AuthSettings): Identity {
  let roles = header(req, 'x-roles');
  let projectId = header(req, 'x-project-id') ?? header(req, 'x-tenant-id') ?? null;
  let userId = header(req, 'x-user-id') ?? null;
  if (auth.strategy === 'keystone' && header(req, 'x-identity-status')?.toLowerCase() !== 'confirmed') {
    throw v2Error('request.unauthorized', 'The request you have made requires authentication.');
  }
  const token = header(req, 'x-auth-token');
  if (auth.strategy === 'noauth' && roles === undefined && token) {
    const t = fromNoauthToken(token);
    roles = t.roles.join(',');
    projectId ??= t.projectId;
    userId ??= t.userId;
  }
  let serviceRoles = header(req, 'x-service-roles');
  if (auth.strategy === 'noauth' && serviceRoles === undefined && header(req, 'x-service-token')) {
    // noauth: a service token is trusted to be one; it carries the first configured service role.
    serviceRoles = auth.serviceTokenRoles[0] ?? 'service';
  }
  const expanded = expand((roles ?? '').split(','));
  return {
    userId,
    projectId: projectId || null,
    roles: expanded,
    serviceRoles: expand((serviceRoles ?? '').split(',')),
    isAdmin: expanded.has('admin'),
    systemScoped: header(req, 'openstack-system-scope') !== undefined,
  };
}

/** Whether the request carries a service token with one of the configured roles. */
export function hasServiceToken(id: Identity, auth: AuthSettings): boolean {
  return auth.serviceTokenRoles.some((r) => id.serviceRoles.has(r.toLowerCase()));
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller of a v2 request (set by the v2 scope's hook). */
    identity: Identity;
  }
}
