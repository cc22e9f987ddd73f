import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { KeystoneSession, KeystoneUnavailableError, ServiceAuthError, TokenValidator } from '../../openstack/keystone/index.js';
import { svc } from '../services.js';
import { KEYSTONE_URL, revoke, serviceAuth, tokenOf } from './peer.js';

describe.skipIf(!svc.keystone)('Keystone client against a real Keystone', () => {
  it('the service user authenticates once and finds endpoints in its catalog', async () => {
    const s = new KeystoneSession({
      authUrl: KEYSTONE_URL,
      auth: serviceAuth(),
      serviceType: 'placement',
      interfaces: ['internal', 'public'],
      region: 'RegionOne',
    });
    const [a, b] = await Promise.all([s.token(), s.token()]);
    expect(a).toBe(b);
    expect(s.authentications).toBe(1);
    expect((await s.tokenData()).roles).toContain('service');
    expect(await s.endpoint()).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("validates a user token with the service's own token: identity from Keystone's answer", async () => {
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth() });
    const v = new TokenValidator({ session, cache: {} });
    const member = await tokenOf('demoMember');
    const data = await v.validate(member.token);
    expect(data).toMatchObject({ userName: 'demo-member', projectName: 'demo', projectId: member.projectId, systemScoped: false });
    expect(data!.roles.sort()).toEqual(['member', 'reader']);
    await v.validate(member.token);
    expect(v.keystoneRequests).toBe(1);
    expect(await v.validate('not-a-token')).toBeNull();
  });

  it('a revoked token is refused once the cache TTL has passed', async () => {
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth() });
    const v = new TokenValidator({ session, cache: { ttlMs: 300 } });
    const reader = await tokenOf('demoReader');
    expect(await v.validate(reader.token)).not.toBeNull();
    await revoke(reader.token);
    await sleep(350);
    expect(await v.validate(reader.token)).toBeNull();
  });

  it("when the service's own token is revoked, it authenticates again and validation goes on", async () => {
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth() });
    const v = new TokenValidator({ session, cache: {} });
    await revoke(await session.token());
    const member = await tokenOf('demoMember');
    expect(await v.validate(member.token)).not.toBeNull();
    expect(session.authentications).toBe(2);
  });

  it('wrong service credentials and an unreachable Keystone are told apart', async () => {
    const wrong = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: { ...serviceAuth(), password: 'wrong' } as ReturnType<typeof serviceAuth> });
    await expect(wrong.token()).rejects.toBeInstanceOf(ServiceAuthError);
    const down = new KeystoneSession({ authUrl: 'http://127.0.0.1:9/v3', auth: serviceAuth(), timeoutMs: 2_000 });
    await expect(down.token()).rejects.toBeInstanceOf(KeystoneUnavailableError);
  });
});
