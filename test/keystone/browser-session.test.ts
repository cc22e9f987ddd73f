import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { svc } from '../services.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { KEYSTONE_URL, password, serviceAuth } from './peer.js';

/**
 * The visualizer's session as the api keeps it (docs/visualizer.md): a browser signs in and gets
 * an HttpOnly, SameSite=Strict cookie, never the token; the cookie works on every operator
 * route; a write carrying it from another origin is refused; a forged cookie is refused; the
 * password renews the token before it expires; signing out ends the session here and revokes
 * the token at Keystone.
 */
describe.skipIf(!svc.keystone)('browser sessions against the real Keystone', () => {
  let stack: Stack;
  let app: FastifyInstance;
  let validator: TokenValidator;
  const own = 'http://cyborg.example';
  const host = 'cyborg.example';

  beforeAll(async () => {
    stack = await startStack({ log: quietLogger() });
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth() });
    validator = new TokenValidator({ session, cache: { ttlMs: 300_000 } });
    app = await buildApi({
      control: stack.conductor,
      log: quietLogger(),
      v2: { authStrategy: 'keystone' },
      auth: { keystone: { validator, wwwAuthenticateUri: KEYSTONE_URL.replace(/\/v3$/, '') } },
    });
    await app.ready();
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await stack?.stop();
  });

  const signIn = (origin = own, who = { username: 'admin', password: password('admin'), project_name: 'admin' }) =>
    app.inject({ method: 'POST', url: '/cyborg/v1/auth/session', headers: { host, origin }, payload: who });
  const cookieOf = (res: { headers: Record<string, unknown> }): string => String(res.headers['set-cookie']).split(';')[0]!;

  it('signs in to a cookie the page cannot read, and no token in the answer', async () => {
    const res = await signIn();
    expect(res.statusCode).toBe(201);
    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie).toMatch(/^cyborg_session=[\w-]{43}; Path=\/cyborg\/v1; Max-Age=\d+; HttpOnly; SameSite=Strict$/);
    expect(res.json()).toMatchObject({ user: { name: 'admin' }, project: { name: 'admin' }, renewable: true });
    expect(res.body).not.toMatch(/token/i);
    const me = await app.inject({ url: '/cyborg/v1/auth/whoami', headers: { host, cookie: cookieOf(res) } });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ strategy: 'keystone', user: { name: 'admin' } });
  });

  it("a write with the cookie from another origin, or naming none, is refused; from the page's own origin it is done", async () => {
    const cookie = cookieOf(await signIn());
    const target = stack.conductor.listAccelerators().find((a) => a.state === 'inactive')!;
    const enable = (headers: Record<string, string>) =>
      app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${target.id}/enable`, headers: { host, cookie, ...headers }, payload: {} });
    const attempts: Record<string, string>[] = [
      { origin: 'http://evil.example' },
      {},
      { origin: 'null' },
      { origin: own, 'sec-fetch-site': 'cross-site' },
      { referer: 'http://evil.example/page' },
    ];
    for (const headers of attempts) {
      const refused = await enable(headers);
      expect(refused.statusCode, JSON.stringify(headers)).toBe(403);
      expect(refused.json()).toMatchObject({ code: 'request.forbidden' });
    }
    expect(stack.conductor.getAccelerator(target.id).state).toBe('inactive');
    expect((await enable({ origin: own })).statusCode).toBe(200);
    expect(stack.conductor.getAccelerator(target.id).state).toBe('ready');
    // Another site's page cannot sign a browser in either (login CSRF).
    expect((await signIn('http://evil.example')).statusCode).toBe(403);
  });

  it('a forged cookie is refused and cleared', async () => {
    const res = await app.inject({ url: '/cyborg/v1/accelerators', headers: { host, cookie: 'cyborg_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } });
    expect(res.statusCode).toBe(401);
    expect(res.json<{ message: string }>().message).toContain('unknown, forged or ended');
    expect(String(res.headers['set-cookie'])).toMatch(/^cyborg_session=; .*Max-Age=0/);
    // Where no identity is needed, a dead cookie is only cleared: the page can still ask the mode and sign in.
    const mode = await app.inject({ url: '/cyborg/v1/auth/mode', headers: { host, cookie: 'cyborg_session=gone' } });
    expect(mode.statusCode).toBe(200);
    expect(String(mode.headers['set-cookie'])).toContain('Max-Age=0');
  });

  it('the password renews the token of the same user and project; a wrong one leaves the session as it was', async () => {
    const first = await signIn();
    const cookie = cookieOf(first);
    const before = first.json<{ expires_at: string }>().expires_at;
    const wrong = await app.inject({
      method: 'POST',
      url: '/cyborg/v1/auth/session/renew',
      headers: { host, origin: own, cookie },
      payload: { password: 'not-it' },
    });
    expect(wrong.statusCode).toBe(401);
    expect((await app.inject({ url: '/cyborg/v1/auth/whoami', headers: { host, cookie } })).statusCode).toBe(200);
    const renewed = await app.inject({
      method: 'POST',
      url: '/cyborg/v1/auth/session/renew',
      headers: { host, origin: own, cookie },
      payload: { password: password('admin') },
    });
    expect(renewed.statusCode).toBe(200);
    expect(Date.parse(renewed.json<{ expires_at: string }>().expires_at)).toBeGreaterThanOrEqual(Date.parse(before));
    expect(cookieOf(renewed)).toBe(cookie);
    expect((await app.inject({ url: '/cyborg/v1/auth/whoami', headers: { host, cookie } })).statusCode).toBe(200);
  });

  it('signing out ends the session here: the same cookie is refused afterwards', async () => {
    const cookie = cookieOf(await signIn());
    const out = await app.inject({ method: 'DELETE', url: '/cyborg/v1/auth/session', headers: { host, origin: own, cookie } });
    expect(out.statusCode).toBe(204);
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
    const replay = await app.inject({ url: '/cyborg/v1/auth/whoami', headers: { host, cookie } });
    expect(replay.statusCode).toBe(401);
  });

  it("tools that send X-Auth-Token are untouched by the cookie, and Cyborg's v2 API never reads it", async () => {
    const cookie = cookieOf(await signIn());
    const v2 = await app.inject({ url: '/v2/devices', headers: { host, cookie } });
    expect(v2.statusCode).toBe(401);
  });
});
