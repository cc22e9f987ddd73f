import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KeystoneSession } from '../../openstack/keystone/index.js';
import { PlacementClient } from '../../openstack/placement/client.js';
import { svc } from '../services.js';
import { KEYSTONE_URL, revoke, serviceAuth } from './peer.js';
import { validatesKeystoneTokens } from './placement-auth.js';

const session = (): KeystoneSession =>
  new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth(), serviceType: 'placement', interfaces: ['internal', 'public'], region: 'RegionOne' });

/** The Placement Keystone's catalog names, when it validates Keystone tokens (.ci/run starts it so). */
const placement = svc.keystone
  ? await session()
      .endpoint()
      .catch(() => null)
  : null;
const ready = placement !== null && (await validatesKeystoneTokens(placement));

describe.skipIf(!ready)('Placement reached through a Keystone session', () => {
  it("finds Placement in the catalog and calls it with the service user's token", async () => {
    const s = session();
    const client = new PlacementClient({ session: s, timeoutMs: 10_000 });
    const name = `ks-${randomUUID().slice(0, 8)}`;
    const p = await client.createProvider({ uuid: randomUUID(), name });
    expect((await client.providersByName(name)).map((x) => x.uuid)).toEqual([p.uuid]);
    await client.deleteProvider(p.uuid);
    expect(s.authentications).toBe(1);
  });

  it('authenticates again when Placement answers 401 for a revoked token, and the call goes through', async () => {
    // Revoked before Placement first sees it: Placement's own token cache would keep a token it already validated.
    const s = session();
    const client = new PlacementClient({ session: s, timeoutMs: 10_000 });
    const first = await s.token();
    await revoke(first);
    expect(await client.providersByName('nothing-by-this-name')).toEqual([]);
    expect(s.authentications).toBe(2);
    expect(await s.token()).not.toBe(first);
  });

  it('authenticates again before its token expires', async () => {
    let now = Date.now();
    const s = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth(), serviceType: 'placement', now: () => now });
    const client = new PlacementClient({ session: s, timeoutMs: 10_000 });
    await client.providersByName('nothing-by-this-name');
    const first = await s.token();
    now = (await s.tokenData()).expiresAt - 1_000;
    expect(await client.providersByName('nothing-by-this-name')).toEqual([]);
    expect(s.authentications).toBe(2);
    expect(await s.token()).not.toBe(first);
  });
});
