import { describe, expect, it } from 'vitest';
import { findEndpoint } from './catalog.js';
import { TokenCache } from './token-cache.js';
import { authBody, readToken, type KeystoneToken } from './types.js';

const token = (expiresAt: number): KeystoneToken => ({
  userId: 'u',
  userName: 'u',
  userDomainId: 'default',
  projectId: 'p',
  projectName: 'p',
  projectDomainId: 'default',
  domainId: null,
  systemScoped: false,
  roles: ['reader'],
  expiresAt,
  isAdminProject: false,
  catalog: [],
});

describe('TokenCache', () => {
  it('keeps a valid token for the TTL, never past its expiry, and a refused one briefly', () => {
    let now = 1_000_000;
    const c = new TokenCache({ maxEntries: 10, ttlMs: 300_000, negativeTtlMs: 5_000, now: () => now });
    c.putValid('long', token(now + 3_600_000));
    c.putValid('short', token(now + 10_000));
    c.putInvalid('bad');
    expect(c.get('long')).toMatchObject({ hit: true, token: { userId: 'u' } });
    expect(c.get('bad')).toEqual({ hit: true, token: null });
    now += 6_000;
    expect(c.get('bad')).toEqual({ hit: false });
    now += 5_000;
    expect(c.get('short')).toEqual({ hit: false });
    expect(c.get('long').hit).toBe(true);
    now += 300_000;
    expect(c.get('long')).toEqual({ hit: false });
  });

  it('drops the least recently used token past maxEntries', () => {
    const c = new TokenCache({ maxEntries: 2, ttlMs: 60_000, negativeTtlMs: 1_000 });
    const far = Date.now() + 3_600_000;
    c.putValid('a', token(far));
    c.putValid('b', token(far));
    c.get('a');
    c.putValid('c', token(far));
    expect(c.size).toBe(2);
    expect(c.get('b').hit).toBe(false);
    expect(c.get('a').hit).toBe(true);
    expect(c.get('c').hit).toBe(true);
  });
});

describe('Keystone catalog and bodies', () => {
  const catalog = [
    {
      type: 'placement',
      endpoints: [
        { interface: 'public', region_id: 'RegionOne', url: 'http://pub:8778/' },
        { interface: 'internal', region_id: 'RegionTwo', url: 'http://int2:8778' },
        { interface: 'internal', region_id: 'RegionOne', url: 'http://int1:8778' },
      ],
    },
  ];

  it('finds the endpoint by service type, interface preference and region', () => {
    expect(findEndpoint(catalog, { serviceType: 'placement', region: 'RegionOne' })).toBe('http://int1:8778');
    expect(findEndpoint(catalog, { serviceType: 'placement', interfaces: ['publicURL'], region: 'RegionOne' })).toBe('http://pub:8778');
    expect(findEndpoint(catalog, { serviceType: 'placement', interfaces: ['admin', 'internal'], region: 'RegionTwo' })).toBe('http://int2:8778');
    expect(findEndpoint(catalog, { serviceType: 'compute' })).toBeUndefined();
  });

  it('builds password and application-credential auth bodies', () => {
    expect(
      authBody({ type: 'password', username: 'cyborg', password: 's', projectName: 'service', userDomainName: 'Default', projectDomainName: 'Default' }),
    ).toEqual({
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'cyborg', domain: { name: 'Default' }, password: 's' } } },
        scope: { project: { name: 'service', domain: { name: 'Default' } } },
      },
    });
    expect(authBody({ type: 'application_credential', id: 'abc', secret: 's' })).toEqual({
      auth: { identity: { methods: ['application_credential'], application_credential: { id: 'abc', secret: 's' } } },
    });
  });

  it('reads a token body: scope, roles, expiry', () => {
    const t = readToken({
      token: { expires_at: '2030-01-01T00:00:00.000000Z', user: { id: 'u1', name: 'demo' }, system: { all: true }, roles: [{ name: 'admin' }] },
    });
    expect(t).toMatchObject({ userId: 'u1', systemScoped: true, projectId: null, roles: ['admin'], expiresAt: Date.UTC(2030, 0, 1) });
    expect(() => readToken({})).toThrow(/without a token/);
  });
});
