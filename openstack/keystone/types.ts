import { CyborgError } from '../../errors/index.js';

/** One service in Keystone's catalog. */
export interface CatalogEntry {
  type: string;
  name?: string;
  endpoints: { interface: string; region?: string | null; region_id?: string | null; url: string }[];
}

/** What Keystone says about a token (`GET /v3/auth/tokens`, or the answer to `POST`). */
export interface KeystoneToken {
  userId: string;
  userName: string | null;
  userDomainId: string | null;
  projectId: string | null;
  projectName: string | null;
  projectDomainId: string | null;
  /** A domain-scoped token's domain. */
  domainId: string | null;
  /** A system-scoped token (`system: {all: true}`). */
  systemScoped: boolean;
  /** Role names, implied roles included (Keystone expands them). */
  roles: string[];
  /** Epoch ms. */
  expiresAt: number;
  isAdminProject: boolean;
  catalog: CatalogEntry[];
}

/** Keystone's token body, the fields read here. */
interface RawToken {
  expires_at: string;
  user: { id: string; name?: string; domain?: { id?: string } };
  project?: { id: string; name?: string; domain?: { id?: string } };
  domain?: { id: string };
  system?: { all?: boolean };
  roles?: { name: string }[];
  is_admin_project?: boolean;
  catalog?: CatalogEntry[];
}

export function readToken(body: unknown): KeystoneToken {
  const t = (body as { token?: RawToken } | null)?.token;
  if (!t || typeof t.expires_at !== 'string' || !t.user?.id) throw new CyborgError('keystone.unavailable', 'Keystone answered without a token body');
  const expiresAt = Date.parse(t.expires_at);
  if (Number.isNaN(expiresAt)) throw new CyborgError('keystone.unavailable', `Keystone gave an unreadable expires_at: ${t.expires_at}`);
  return {
    userId: t.user.id,
    userName: t.user.name ?? null,
    userDomainId: t.user.domain?.id ?? null,
    projectId: t.project?.id ?? null,
    projectName: t.project?.name ?? null,
    projectDomainId: t.project?.domain?.id ?? null,
    domainId: t.domain?.id ?? null,
    systemScoped: t.system?.all === true,
    roles: (t.roles ?? []).map((r) => r.name),
    expiresAt,
    isAdminProject: t.is_admin_project ?? true,
    catalog: t.catalog ?? [],
  };
}

/** Keystone could not be asked (down, timing out, 5xx): callers answer 503, never 401. */
export class KeystoneUnavailableError extends CyborgError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('keystone.unavailable', message, {}, options);
    this.name = 'KeystoneUnavailableError';
  }
}

/** Keystone refuses this service's own credentials (or their permission to validate tokens). */
export class ServiceAuthError extends CyborgError {
  constructor(
    message: string,
    readonly httpStatus: number,
  ) {
    super('keystone.service_auth_failed', message, { httpStatus });
    this.name = 'ServiceAuthError';
  }
}

/** How a service authenticates: keystoneauth's `password` or `v3applicationcredential` plugin. */
export type AuthMethod =
  | {
      type: 'password';
      username: string;
      password: string;
      userDomainName?: string;
      userDomainId?: string;
      projectName?: string;
      projectId?: string;
      projectDomainName?: string;
      projectDomainId?: string;
      /** A system-scoped token instead of a project one. */
      systemScope?: 'all';
    }
  | { type: 'application_credential'; id?: string; name?: string; secret: string; username?: string; userDomainName?: string }
  /** keystoneauth's `v3token`: a token one already has, exchanged for one scoped to a project (the `openstack --os-token` way). */
  | { type: 'token'; token: string; projectName?: string; projectId?: string; projectDomainName?: string; projectDomainId?: string; systemScope?: 'all' };

/** The body of `POST /v3/auth/tokens` for an auth method. */
export function authBody(m: AuthMethod): unknown {
  if (m.type === 'application_credential') {
    const cred: Record<string, unknown> = { secret: m.secret };
    if (m.id) cred.id = m.id;
    else cred.name = m.name;
    if (!m.id && m.username) cred.user = { name: m.username, domain: { name: m.userDomainName ?? 'Default' } };
    return { auth: { identity: { methods: ['application_credential'], application_credential: cred } } };
  }
  const domain = (id?: string, name?: string) => (id ? { id } : { name: name ?? 'Default' });
  const identity =
    m.type === 'token'
      ? { methods: ['token'], token: { id: m.token } }
      : { methods: ['password'], password: { user: { name: m.username, domain: domain(m.userDomainId, m.userDomainName), password: m.password } } };
  let scope: unknown;
  if (m.systemScope) scope = { system: { all: true } };
  else if (m.projectId) scope = { project: { id: m.projectId } };
  else if (m.projectName) scope = { project: { name: m.projectName, domain: domain(m.projectDomainId, m.projectDomainName) } };
  return { auth: scope ? { identity, scope } : { identity } };
}
