import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { KeystoneToken } from '../../openstack/keystone/index.js';
import { BrowserSessions, crossSiteReason, readCookie, sessionCookie } from './browser-session.js';

const token = (expiresAt: number): KeystoneToken => ({
  userId: 'u1',
  userName: 'alice',
  userDomainId: 'default',
  projectId: 'p1',
  projectName: 'demo',
  projectDomainId: 'default',
  domainId: null,
  systemScoped: false,
  roles: ['reader'],
  expiresAt,
  isAdminProject: false,
  catalog: [],
});

const req = (headers: Record<string, string>, protocol = 'http', host = 'cyborg.example:6680') => ({ headers, protocol, host }) as unknown as FastifyRequest;

describe("the api's browser sessions", () => {
  it("hands out an unguessable id, finds the session by it, and forgets it at the token's expiry", () => {
    let now = 1_000;
    const sessions = new BrowserSessions(10, () => now);
    const { id, session } = sessions.create('tok-1', token(5_000), 'password');
    expect(id).toMatch(/^[\w-]{43}$/);
    expect(sessions.get(id)).toBe(session);
    expect(sessions.get(`${id}x`)).toBeUndefined();
    now = 5_000;
    expect(sessions.get(id)).toBeUndefined();
    expect(sessions.size).toBe(0);
  });

  it('renews in place, ends on request, and drops the oldest when full', () => {
    const sessions = new BrowserSessions(2, () => 0);
    const a = sessions.create('a', token(9_000), 'token');
    expect(sessions.renew(a.id, 'a2', token(19_000))).toMatchObject({ token: 'a2', expiresAt: 19_000, obtained: 'password' });
    const b = sessions.create('b', token(9_000), 'password');
    sessions.create('c', token(9_000), 'password');
    expect(sessions.get(a.id)).toBeUndefined();
    expect(sessions.end(b.id)?.token).toBe('b');
    expect(sessions.get(b.id)).toBeUndefined();
  });

  it('reads its cookie among others, and writes it HttpOnly, SameSite=Strict, on the operator path', () => {
    expect(readCookie('theme=dark; cyborg_session=abc; other=1', 'cyborg_session')).toBe('abc');
    expect(readCookie('xcyborg_session=abc', 'cyborg_session')).toBeUndefined();
    expect(sessionCookie('abc', 59.9, true)).toBe('cyborg_session=abc; Path=/cyborg/v1; Max-Age=59; HttpOnly; SameSite=Strict; Secure');
  });

  it('takes a write from its own origin only', () => {
    expect(crossSiteReason(req({ origin: 'http://cyborg.example:6680' }))).toBeUndefined();
    expect(crossSiteReason(req({ origin: 'http://cyborg.example' }, 'http', 'cyborg.example:80'))).toBeUndefined();
    expect(crossSiteReason(req({ referer: 'http://cyborg.example:6680/ui/' }))).toBeUndefined();
    expect(crossSiteReason(req({ origin: 'https://cyborg.example:6680' }))).toMatch(/not this api's/);
    expect(crossSiteReason(req({ origin: 'http://cyborg.example:6681' }))).toMatch(/not this api's/);
    expect(crossSiteReason(req({ origin: 'null' }))).toMatch(/not this api's/);
    expect(crossSiteReason(req({}))).toBe('it names no Origin');
    expect(crossSiteReason(req({ origin: 'http://cyborg.example:6680', 'sec-fetch-site': 'same-site' }))).toMatch(/another site/);
  });
});
