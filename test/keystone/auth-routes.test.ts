import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { svc } from '../services.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { KEYSTONE_URL, password, serviceAuth, tokenOf } from './peer.js';

/** The api in keystone mode against the real Keystone, as test/keystone/api.test.ts builds it. */
async function keystoneApi(stack: Stack, o: { authUrl?: string; rateLimit?: number } = {}): Promise<FastifyInstance> {
  const timeoutMs = o.authUrl ? 2_000 : 10_000;
  const session = new KeystoneSession({ authUrl: o.authUrl ?? KEYSTONE_URL, auth: serviceAuth(), timeoutMs });
  const validator = new TokenValidator({ session, cache: {}, timeoutMs });
  const app = await buildApi({
    control: stack.conductor,
    log: quietLogger(),
    v2: { authStrategy: 'keystone' },
    auth: { keystone: { validator, wwwAuthenticateUri: 'http://127.0.0.1:15001' } },
    ...(o.rateLimit ? { limits: { operatorRateLimit: o.rateLimit } } : {}),
  });
  await app.ready();
  return app;
}

const signIn = (app: FastifyInstance, payload: Record<string, string>) => app.inject({ method: 'POST', url: '/cyborg/v1/auth/tokens', payload });

describe('signing in where the api authenticates nobody (noauth)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ log: quietLogger(), api: true });
  });
  afterAll(async () => stack?.stop());

  it('says no sign-in is needed, refuses one with auth.not_required, and lets the caller do everything', async () => {
    const app = stack.app!;
    expect((await app.inject({ url: '/cyborg/v1/auth/mode' })).json()).toEqual({ strategy: 'noauth', sign_in: false });
    const tried = await signIn(app, { username: 'admin', password: 'x', project_name: 'admin' });
    expect(tried.statusCode).toBe(404);
    expect(tried.json()).toMatchObject({ code: 'auth.not_required' });
    const me = await app.inject({ url: '/cyborg/v1/auth/whoami' });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ strategy: 'noauth', roles: expect.arrayContaining(['admin']) });
    expect(me.json<{ allowed: string[] }>().allowed).toContain('cyborg:operator:accelerator:enable');
  });
});

describe.skipIf(!svc.keystone)('signing in through the api, against a real Keystone', () => {
  let stack: Stack;
  let app: FastifyInstance;

  beforeAll(async () => {
    stack = await startStack({ log: quietLogger() });
    app = await keystoneApi(stack);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await stack?.stop();
  });

  it('tells an anonymous page that it must sign in, and where', async () => {
    expect((await app.inject({ url: '/cyborg/v1/auth/mode' })).json()).toEqual({
      strategy: 'keystone',
      sign_in: true,
      www_authenticate_uri: 'http://127.0.0.1:15001',
    });
    const anon = await app.inject({ url: '/cyborg/v1/auth/whoami' });
    expect(anon.statusCode).toBe(401);
    expect(anon.headers['www-authenticate']).toBe('Keystone uri="http://127.0.0.1:15001"');
  });

  it('a reader signs in with a password and learns she may read but not enable', async () => {
    const res = await signIn(app, { username: 'demo-reader', password: password('demo-reader'), project_name: 'demo' });
    expect(res.statusCode).toBe(201);
    const got = res.json<{ token: string; expires_at: string; user: { name: string }; project: { name: string }; roles: string[] }>();
    expect(got).toMatchObject({ user: { name: 'demo-reader' }, project: { name: 'demo' } });
    expect(got.roles).toContain('reader');
    expect(Date.parse(got.expires_at)).toBeGreaterThan(Date.now());
    // The token works on the operator API, as any Keystone token does (on the reads of its own project).
    expect((await app.inject({ url: '/cyborg/v1/snapshot', headers: { 'x-auth-token': got.token } })).statusCode).toBe(200);
    const me = await app.inject({ url: '/cyborg/v1/auth/whoami', headers: { 'x-auth-token': got.token } });
    expect(me.statusCode).toBe(200);
    const who = me.json<{ user: { name: string }; project: { name: string }; allowed: string[]; expires_at: string }>();
    expect(who).toMatchObject({ strategy: 'keystone', user: { name: 'demo-reader' }, project: { name: 'demo' }, expires_at: got.expires_at });
    expect(who.allowed).toContain('cyborg:operator:event:snapshot');
    expect(who.allowed).toContain('cyborg:operator:event:stream');
    // A project's reader reads its project's part, not the fleet.
    expect(who.allowed).not.toContain('cyborg:operator:accelerator:get');
    expect(who.allowed).not.toContain('cyborg:operator:scope:fleet');
    expect(who.allowed).not.toContain('cyborg:operator:accelerator:enable');
  });

  it("an admin's whoami lists the operator writes", async () => {
    const res = await signIn(app, {
      username: 'admin',
      password: password('admin'),
      project_name: 'admin',
      user_domain_name: 'Default',
      project_domain_name: 'Default',
    });
    expect(res.statusCode).toBe(201);
    const me = await app.inject({ url: '/cyborg/v1/auth/whoami', headers: { 'x-auth-token': res.json<{ token: string }>().token } });
    expect(me.json<{ allowed: string[] }>().allowed).toEqual(expect.arrayContaining(['cyborg:operator:accelerator:enable', 'cyborg:operator:driver:install']));
  });

  it('adopts a token the user already has, and refuses one Keystone does not know', async () => {
    const own = await tokenOf('demoMember');
    const adopted = await signIn(app, { token: own.token });
    expect(adopted.statusCode).toBe(201);
    expect(adopted.json()).toMatchObject({ token: own.token, user: { id: own.userId, name: 'demo-member' }, project: { id: own.projectId } });
    const bogus = await signIn(app, { token: 'gAAAAA-not-a-token' });
    expect(bogus.statusCode).toBe(401);
    expect(bogus.json()).toMatchObject({ code: 'request.unauthorized' });
  });

  it('a wrong password, an unknown user or a project without a role are one and the same 401', async () => {
    for (const payload of [
      { username: 'demo-reader', password: 'wrong', project_name: 'demo' },
      { username: 'nobody-here', password: 'wrong', project_name: 'demo' },
      { username: 'demo-reader', password: password('demo-reader'), project_name: 'other' },
    ]) {
      const res = await signIn(app, payload);
      expect(res.statusCode, payload.username).toBe(401);
      expect(res.json()).toMatchObject({ code: 'request.unauthorized', message: expect.stringContaining('refused these credentials') });
      expect(res.headers['www-authenticate']).toBe('Keystone uri="http://127.0.0.1:15001"');
    }
  });

  it("bounds what it is given: no password over Keystone's limit, no extra fields, no empty names", async () => {
    const bad: Record<string, string>[] = [
      { username: 'demo-reader', password: 'x'.repeat(4097), project_name: 'demo' },
      { username: 'demo-reader', password: 'x', project_name: 'demo', roles: 'admin' },
      { username: '', password: 'x', project_name: 'demo' },
      { username: 'demo-reader', password: 'x' },
      { token: 'has a space' },
    ];
    for (const payload of bad) {
      expect((await signIn(app, payload)).statusCode, JSON.stringify(payload).slice(0, 80)).toBe(400);
    }
  });

  it("counts sign-ins against the client's write limit", async () => {
    const limited = await keystoneApi(stack, { rateLimit: 2 });
    try {
      const wrong = { username: 'demo-reader', password: 'wrong', project_name: 'demo' };
      expect((await signIn(limited, wrong)).statusCode).toBe(401);
      expect((await signIn(limited, wrong)).statusCode).toBe(401);
      const third = await signIn(limited, wrong);
      expect(third.statusCode).toBe(429);
      expect(third.json()).toMatchObject({ code: 'request.rate_limited' });
    } finally {
      await limited.close();
    }
  });

  it('answers 503, not 401, while Keystone is unreachable', async () => {
    const down = await keystoneApi(stack, { authUrl: 'http://127.0.0.1:9/v3' });
    try {
      const res = await signIn(down, { username: 'demo-reader', password: 'whatever', project_name: 'demo' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ code: 'keystone.unavailable' });
    } finally {
      await down.close();
    }
  });
});
