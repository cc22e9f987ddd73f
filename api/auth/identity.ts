import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeystoneToken, TokenValidator } from '../../openstack/keystone/index.js';
import type { Enforcer } from '../../policy/index.js';
import { CyborgError } from '../../errors/index.js';

/** Who is calling, as Keystone (or noauth) tells it. */
export interface Identity {
  userId: string | null;
  projectId: string | null;
  /** A domain-scoped token's domain (Keystone mode). */
  domainId?: string | null;
  userName?: string | null;
  projectName?: string | null;
  /** Roles with Keystone's implied roles expanded (admin ⇒ manager ⇒ member ⇒ reader). */
  roles: Set<string>;
  /** Roles of the service token (X-Service-Token as Keystone validated it; X-Service-Roles in noauth), empty without one. */
  serviceRoles: Set<string>;
  /** Cyborg's `context.is_admin`: `admin` among the roles. */
  isAdmin: boolean;
  /** A system-scoped token (refused by project-scoped rules while `enforce_scope` is on). */
  systemScoped: boolean;
  /** Where the identity came from: Keystone's answer, noauth headers, or noauth's operator default. */
  source: 'keystone' | 'noauth';
}

/** In-process token validation (keystone mode). */
export interface KeystoneAuth {
  validator: TokenValidator;
  /** `[keystone_authtoken] www_authenticate_uri`: where a 401 tells clients to get a token. */
  wwwAuthenticateUri: string;
}

export interface AuthSettings {
  strategy: 'noauth' | 'keystone';
  serviceTokenRequired: boolean;
  serviceTokenRoles: string[];
  enforceNewDefaults: boolean;
  /** Required in keystone mode: validates X-Auth-Token / X-Service-Token. */
  keystone?: KeystoneAuth;
  /** The policy in force; Cyborg's defaults (with `enforceNewDefaults`) when none is given. */
  enforcer?: Enforcer;
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

/** noauth: the Keystone headers are trusted as given, and a bare `X-Auth-Token` stands in for them when there are none. */
function fromHeaders(req: FastifyRequest, auth: AuthSettings): Identity {
  let roles = header(req, 'x-roles');
  let projectId = header(req, 'x-project-id') ?? header(req, 'x-tenant-id') ?? null;
  let userId = header(req, 'x-user-id') ?? null;
  // keystoneauth's `none` auth plugin sends the placeholder `notused`: a token that names nobody.
  const sent = header(req, 'x-auth-token');
  const token = sent === 'notused' ? undefined : sent;
  if (roles === undefined && token) {
    const t = fromNoauthToken(token);
    roles = t.roles.join(',');
    projectId ??= t.projectId;
    userId ??= t.userId;
  }
  // A client that sends no identity at all (`openstack --os-auth-type none`) is the operator of an
  // unauthenticated deployment, as on /cyborg/v1: admin, with no project of its own.
  if (roles === undefined && !token && userId === null && projectId === null) roles = 'admin';
  let serviceRoles = header(req, 'x-service-roles');
  if (serviceRoles === undefined && header(req, 'x-service-token')) {
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
    source: 'noauth',
  };
}

/** The identity a validated Keystone token stands for; nothing the client sent besides the token counts. */
export function fromKeystone(t: KeystoneToken, service: KeystoneToken | null): Identity {
  const roles = expand(t.roles);
  return {
    userId: t.userId,
    projectId: t.projectId,
    domainId: t.domainId,
    userName: t.userName,
    projectName: t.projectName,
    roles,
    serviceRoles: expand(service?.roles ?? []),
    isAdmin: roles.has('admin'),
    systemScoped: t.systemScoped,
    source: 'keystone',
  };
}

function unauthorized(reply: FastifyReply | undefined, auth: AuthSettings, why: string): Error {
  if (reply && auth.keystone) void reply.header('www-authenticate', `Keystone uri="${auth.keystone.wwwAuthenticateUri}"`);
  return new CyborgError('request.unauthorized', `The request you have made requires authentication. ${why}`.trim());
}

/**
 * Keystone mode: `X-Auth-Token` (and `X-Service-Token` when sent) validated with Keystone
 * through the token cache. Missing, invalid, expired or revoked ⇒ 401 with `WWW-Authenticate`;
 * Keystone unreachable ⇒ its 503 propagates (a client must not think its token is bad).
 */
async function fromToken(req: FastifyRequest, auth: AuthSettings, reply?: FastifyReply): Promise<Identity> {
  const token = header(req, 'x-auth-token');
  if (!token) throw unauthorized(reply, auth, 'No X-Auth-Token was sent.');
  if (!auth.keystone) throw new CyborgError('internal.error', 'keystone auth strategy without a token validator');
  const serviceToken = header(req, 'x-service-token');
  const [user, service] = await Promise.all([auth.keystone.validator.validate(token), serviceToken ? auth.keystone.validator.validate(serviceToken) : null]);
  if (!user) throw unauthorized(reply, auth, 'The token is invalid, expired or revoked.');
  if (serviceToken && !service) throw unauthorized(reply, auth, 'The service token is invalid, expired or revoked.');
  return fromKeystone(user, service);
}

/**
 * The seam for identity. In `noauth` the Keystone headers are trusted as given. In `keystone`
 * mode the identity is Keystone's answer about the request's token; identity headers sent by
 * the client (`X-Roles`, `X-Identity-Status`, …) are ignored.
 */
export async function identify(req: FastifyRequest, auth: AuthSettings, reply?: FastifyReply): Promise<Identity> {
  return auth.strategy === 'keystone' ? fromToken(req, auth, reply) : fromHeaders(req, auth);
}

/** noauth's caller of the operator API (`/cyborg/v1`): trusted as an admin, as before policy covered it. */
export function noauthOperator(req: FastifyRequest): Identity {
  const roles = expand(['admin']);
  const projectId = header(req, 'x-project-id') ?? header(req, 'x-tenant-id') ?? null;
  return { userId: header(req, 'x-user-id') ?? null, projectId, roles, serviceRoles: new Set(), isAdmin: true, systemScoped: false, source: 'noauth' };
}

/** Whether the request carries a service token with one of the configured roles. */
export function hasServiceToken(id: Identity, auth: AuthSettings): boolean {
  return auth.serviceTokenRoles.some((r) => id.serviceRoles.has(r.toLowerCase()));
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller (set by the v2 scope's hook, or by an operator route's policy hook). */
    identity: Identity;
  }
}
