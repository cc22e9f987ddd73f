import { request } from 'undici';
import type { AuthMethod } from '../../openstack/keystone/index.js';
import { svc } from '../services.js';

/** The Keystone peer's users (../shared/peers/keystone/README.md); passwords from its KEYSTONE_* lines or their defaults. */
export const KEYSTONE_URL = svc.keystone ?? 'http://127.0.0.1:15001/v3';

export const password = (user: string): string => process.env[`KEYSTONE_${user.toUpperCase().replace(/-/g, '_')}_PASSWORD`] ?? `${user}-secret`;

export const users = {
  cyborg: { user: 'cyborg', project: 'service' },
  nova: { user: 'nova', project: 'service' },
  admin: { user: 'admin', project: 'admin' },
  demoMember: { user: 'demo-member', project: 'demo' },
  demoReader: { user: 'demo-reader', project: 'demo' },
  demoManager: { user: 'demo-manager', project: 'demo' },
  otherMember: { user: 'other-member', project: 'other' },
} as const;

export type PeerUser = keyof typeof users;

/** How the service under test authenticates: the `cyborg` user in project `service`. */
export function serviceAuth(): AuthMethod {
  return {
    type: 'password',
    username: 'cyborg',
    password: password('cyborg'),
    userDomainName: 'Default',
    projectName: 'service',
    projectDomainName: 'Default',
  };
}

/** A project-scoped token for one of the peer's users, as `openstack token issue` gets it. */
export async function tokenOf(who: PeerUser): Promise<{ token: string; projectId: string; userId: string }> {
  const { user, project } = users[who];
  const res = await request(`${KEYSTONE_URL}/auth/tokens?nocatalog`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: { methods: ['password'], password: { user: { name: user, domain: { name: 'Default' }, password: password(user) } } },
        scope: { project: { name: project, domain: { name: 'Default' } } },
      },
    }),
  });
  const body = (await res.body.json()) as { token: { project: { id: string }; user: { id: string } } };
  const token = res.headers['x-subject-token'];
  if (res.statusCode !== 201 || typeof token !== 'string') throw new Error(`Keystone refused ${user}: ${res.statusCode}`);
  return { token, projectId: body.token.project.id, userId: body.token.user.id };
}

/** Revokes a token (its owner may): `DELETE /v3/auth/tokens`. */
export async function revoke(token: string): Promise<void> {
  const res = await request(`${KEYSTONE_URL}/auth/tokens`, { method: 'DELETE', headers: { 'x-auth-token': token, 'x-subject-token': token } });
  await res.body.dump();
  if (res.statusCode !== 204) throw new Error(`revoking a token: ${res.statusCode}`);
}

/**
 * A token that expires in about `lifeMs`: Keystone lets a client choose no token lifetime, but a
 * token obtained with an application credential ends when the credential does. The credential is
 * the user's own (self-service, as Keystone's default policy allows).
 */
export async function shortLivedToken(who: PeerUser, lifeMs: number): Promise<{ token: string; expiresAt: number }> {
  const owner = await tokenOf(who);
  const expires = new Date(Date.now() + lifeMs).toISOString().replace(/Z$/, '');
  const made = await request(`${KEYSTONE_URL}/users/${owner.userId}/application_credentials`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-auth-token': owner.token },
    body: JSON.stringify({ application_credential: { name: `expiring-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, expires_at: expires } }),
  });
  const cred = (await made.body.json()) as { application_credential?: { id: string; secret: string } };
  if (made.statusCode !== 201 || !cred.application_credential) throw new Error(`Keystone refused an application credential: ${made.statusCode}`);
  const res = await request(`${KEYSTONE_URL}/auth/tokens?nocatalog`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: {
          methods: ['application_credential'],
          application_credential: { id: cred.application_credential.id, secret: cred.application_credential.secret },
        },
      },
    }),
  });
  const body = (await res.body.json()) as { token?: { expires_at: string } };
  const token = res.headers['x-subject-token'];
  if (res.statusCode !== 201 || typeof token !== 'string' || !body.token)
    throw new Error(`Keystone refused the application credential's token: ${res.statusCode}`);
  return { token, expiresAt: Date.parse(body.token.expires_at) };
}
