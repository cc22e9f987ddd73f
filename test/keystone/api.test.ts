import type { FastifyInstance } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { svc } from '../services.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { KEYSTONE_URL, revoke, serviceAuth, tokenOf, type PeerUser } from './peer.js';

const FAKE_PROFILE = { 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' };
const UUID = /^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The api in keystone mode, validating tokens with the real Keystone as the `cyborg` service user. */
async function keystoneApi(stack: Stack, o: { authUrl?: string; ttlMs?: number } = {}): Promise<{ app: FastifyInstance; validator: TokenValidator }> {
  // Keystone here takes up to a second per validation (its cache is off): the default timeout, except for the unreachable one.
  const timeoutMs = o.authUrl ? 2_000 : 10_000;
  const session = new KeystoneSession({ authUrl: o.authUrl ?? KEYSTONE_URL, auth: serviceAuth(), timeoutMs });
  const validator = new TokenValidator({ session, cache: { ttlMs: o.ttlMs ?? 300_000 }, timeoutMs });
  const app = await buildApi({
    control: stack.conductor,
    log: quietLogger(),
    v2: { authStrategy: 'keystone' },
    auth: { keystone: { validator, wwwAuthenticateUri: 'http://127.0.0.1:15001' } },
  });
  await app.ready();
  return { app, validator };
}

describe.skipIf(!svc.keystone)('the api in keystone mode, against a real Keystone', () => {
  let stack: Stack;
  let app: FastifyInstance;
  const tokens = {} as Record<PeerUser, { token: string; projectId: string }>;
  const as = (who: PeerUser) => ({ 'x-auth-token': tokens[who].token });

  beforeAll(async () => {
    stack = await startStack({ log: quietLogger() });
    ({ app } = await keystoneApi(stack));
    for (const who of ['admin', 'demoMember', 'demoReader', 'otherMember', 'nova'] as const) tokens[who] = await tokenOf(who);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await stack?.stop();
  });

  it('refuses forged identity headers without a token: 401 naming where to get one', async () => {
    const forged = { 'x-identity-status': 'Confirmed', 'x-roles': 'admin', 'x-user-id': 'mallory', 'x-project-id': 'demo' };
    const v2 = await app.inject({ url: '/v2/devices', headers: forged });
    expect(v2.statusCode).toBe(401);
    expect(v2.headers['www-authenticate']).toBe('Keystone uri="http://127.0.0.1:15001"');
    const op = await app.inject({ method: 'POST', url: '/cyborg/v1/accelerators/x/disable', headers: forged });
    expect(op.statusCode).toBe(401);
    expect((await app.inject({ url: '/v2/devices', headers: { 'x-auth-token': 'not-a-token' } })).statusCode).toBe(401);
  });

  it('keeps the discovery documents open', async () => {
    expect((await app.inject({ url: '/' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v2' })).statusCode).toBe(200);
  });

  it('an anonymous request to the operator API, its event stream included, is 401', async () => {
    for (const url of ['/cyborg/v1/accelerators', '/cyborg/v1/hosts', '/cyborg/v1/snapshot', '/cyborg/v1/events']) {
      expect((await app.inject({ url })).statusCode, url).toBe(401);
    }
  });

  it('a project reader may not read the whole fleet nor enable an accelerator; the admin may', async () => {
    const refused = await app.inject({ url: '/cyborg/v1/accelerators', headers: as('demoReader') });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'request.forbidden', rule: 'cyborg:operator:accelerator:get' });
    const list = await app.inject({ url: '/cyborg/v1/accelerators', headers: as('admin') });
    expect(list.statusCode).toBe(200);
    const id = list.json<{ accelerators: { id: string }[] }>().accelerators[0]!.id;
    const enable = await app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${id}/enable`, headers: as('demoReader') });
    expect(enable.statusCode).toBe(403);
    expect(enable.json()).toMatchObject({ code: 'request.forbidden', rule: 'cyborg:operator:accelerator:enable' });
    // The identity headers a reader adds change nothing: Keystone's answer is the identity.
    const forged = await app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${id}/enable`, headers: { ...as('demoReader'), 'x-roles': 'admin' } });
    expect(forged.statusCode).toBe(403);
    expect((await app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${id}/enable`, headers: as('admin') })).statusCode).toBe(200);
  });

  it("a member of project demo never sees project other's ARQs", async () => {
    const dp = await app.inject({ method: 'POST', url: '/v2/device_profiles', headers: as('admin'), payload: [{ name: 'ks-dp', groups: [FAKE_PROFILE] }] });
    expect(dp.statusCode).toBe(201);
    const made = await app.inject({ method: 'POST', url: '/v2/accelerator_requests', headers: as('otherMember'), payload: { device_profile_name: 'ks-dp' } });
    expect(made.statusCode).toBe(201);
    const arq = made.json<{ arqs: { uuid: string; project_id: string }[] }>().arqs[0]!;
    expect(arq.project_id).toBe(tokens.otherMember.projectId);
    const seen = await app.inject({ url: '/v2/accelerator_requests', headers: as('demoMember') });
    expect(seen.statusCode).toBe(200);
    expect(seen.json<{ arqs: { uuid: string }[] }>().arqs.map((a) => a.uuid)).not.toContain(arq.uuid);
    expect((await app.inject({ url: `/v2/accelerator_requests/${arq.uuid}`, headers: as('demoMember') })).statusCode).toBe(404);
    expect((await app.inject({ url: `/v2/accelerator_requests/${arq.uuid}`, headers: as('otherMember') })).statusCode).toBe(200);
  });

  it("a service token is validated too: Nova's counts, a bogus one is 401", async () => {
    const bogus = await app.inject({
      method: 'DELETE',
      url: '/v2/accelerator_requests?instance=0b2e4f4e-1c55-4f3a-9a2c-6b1f0c7d9e11',
      headers: { ...as('demoMember'), 'x-service-token': 'bogus' },
    });
    expect(bogus.statusCode).toBe(401);
    const without = await app.inject({
      method: 'DELETE',
      url: '/v2/accelerator_requests?instance=0b2e4f4e-1c55-4f3a-9a2c-6b1f0c7d9e11',
      headers: as('demoMember'),
    });
    expect(without.statusCode).toBe(403);
    expect(without.body).toContain('requires a service token');
    const withNova = await app.inject({
      method: 'DELETE',
      url: '/v2/accelerator_requests?instance=0b2e4f4e-1c55-4f3a-9a2c-6b1f0c7d9e11',
      headers: { ...as('demoMember'), 'x-service-token': tokens.nova.token },
    });
    expect(withNova.statusCode).toBe(204);
  });

  it('answers every response with an OpenStack request id, keeping a valid one the client sent', async () => {
    const fresh = await app.inject({ url: '/v2' });
    expect(fresh.headers['x-openstack-request-id']).toMatch(UUID);
    const mine = 'req-0b2e4f4e-1c55-4f3a-9a2c-6b1f0c7d9e11';
    expect((await app.inject({ url: '/cyborg/v1/hosts', headers: { 'x-openstack-request-id': mine } })).headers['x-openstack-request-id']).toBe(mine);
    const junk = await app.inject({ url: '/v2', headers: { 'x-openstack-request-id': 'drop table;' } });
    expect(junk.headers['x-openstack-request-id']).toMatch(UUID);
  });

  it('a revoked token is refused once the cache TTL has passed', async () => {
    const short = await keystoneApi(stack, { ttlMs: 500 });
    try {
      const reader = await tokenOf('demoReader');
      expect((await short.app.inject({ url: '/cyborg/v1/snapshot', headers: { 'x-auth-token': reader.token } })).statusCode).toBe(200);
      await revoke(reader.token);
      await sleep(600);
      expect((await short.app.inject({ url: '/cyborg/v1/snapshot', headers: { 'x-auth-token': reader.token } })).statusCode).toBe(401);
    } finally {
      await short.app.close();
    }
  });

  it('asks Keystone once per token, not per request', async () => {
    const fresh = await keystoneApi(stack);
    try {
      for (let i = 0; i < 20; i++) expect((await fresh.app.inject({ url: '/cyborg/v1/snapshot', headers: as('demoReader') })).statusCode).toBe(200);
      expect(fresh.validator.keystoneRequests).toBe(1);
    } finally {
      await fresh.app.close();
    }
  });

  it('answers 503, not 401, while Keystone is unreachable, naming no internal URL to whoever sends a token', async () => {
    const down = await keystoneApi(stack, { authUrl: 'http://127.0.0.1:9/v3' });
    try {
      const v2 = await down.app.inject({ url: '/v2/devices', headers: as('admin') });
      expect(v2.statusCode).toBe(503);
      const op = await down.app.inject({ url: '/cyborg/v1/accelerators', headers: { 'x-auth-token': 'any string at all' } });
      expect(op.statusCode).toBe(503);
      expect(op.json()).toMatchObject({ code: 'keystone.unavailable', message: expect.stringContaining('Keystone is not answering') });
      for (const body of [v2.body, op.body]) {
        expect(body).not.toMatch(/127\.0\.0\.1|http:|\/v3|ECONNREFUSED|cyborg-secret|\bat \w+ \(/);
      }
    } finally {
      await down.app.close();
    }
  });
});
