import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enableAll, FAKE_PROFILE, fault, persona, startCyborg, type Cyborg } from './harness.js';
import { haveReference, keys, observedBody, sample } from './reference.js';
import { PROTOCOL, RELEASE, SCHEMA_REVISION } from '../../release/index.js';

const HOST = 'cyborg-host1';
const v = (version: string) => ({ ...persona.admin, 'openstack-api-version': version });
type Obj = Record<string, unknown>;

/**
 * The v2 contract: response shapes against what a real Cyborg answered (`observed/`) and its
 * API samples, every microversion rule, and every error status the reference names.
 */
describe('Cyborg v2 contract', () => {
  let c: Cyborg;
  let profileUuid = '';
  let arq = '';
  let deviceUuid = '';
  let deployableUuid = '';

  beforeAll(async () => {
    c = await startCyborg({ hosts: [HOST] });
    await enableAll(c);
    const dp = await c.call('POST', '/v2/device_profiles', {
      headers: persona.admin,
      body: [{ name: 'fake-dp-5c6fc9f1', description: 'fake FPGA profile', groups: [FAKE_PROFILE] }],
    });
    profileUuid = dp.json<{ uuid: string }>().uuid;
    const created = await c.call('POST', '/v2/accelerator_requests', { headers: persona.admin, body: { device_profile_name: 'fake-dp-5c6fc9f1' } });
    arq = created.json<{ arqs: { uuid: string }[] }>().arqs[0]!.uuid;
    deviceUuid = (await c.call('GET', '/v2/devices', { headers: persona.admin })).json<{ devices: { uuid: string }[] }>().devices[0]!.uuid;
    deployableUuid = (await c.call('GET', '/v2/deployables', { headers: persona.admin })).json<{ deployables: { uuid: string }[] }>().deployables[0]!.uuid;
  });
  afterAll(async () => c.stop());

  describe('version documents', () => {
    it('GET / lists v2 (2.0–2.3) without microversion headers, and needs no auth', async () => {
      const res = await c.call('GET', '/');
      expect(res.statusCode).toBe(200);
      expect(res.headers['openstack-api-version']).toBeUndefined();
      const body = res.json<{ versions: Obj[]; default_version: Obj }>();
      expect(body.versions[0]).toMatchObject({ id: 'v2', status: 'CURRENT', min_version: '2.0', max_version: '2.3' });
      expect(body.default_version).toEqual(body.versions[0]);
      if (haveReference) expect(keys(body)).toEqual(keys(observedBody('01-root.json')));
    });

    it.each(['/v2', '/v2/'])('GET %s is the v2 document with the microversion headers', async (path) => {
      const res = await c.call('GET', path);
      expect(res.statusCode).toBe(200);
      expect(res.headers).toMatchObject({
        'openstack-api-version': 'accelerator 2.0',
        'openstack-api-minimum-version': '2.0',
        'openstack-api-maximum-version': '2.3',
        vary: 'OpenStack-API-Version',
      });
      expect(res.json()).toMatchObject({ id: 'v2.0', status: 'CURRENT', min_version: '2.0', max_version: '2.3' });
      // Beside Cyborg's keys, this service's release (docs/upgrade.md): clients read the keys they know.
      expect(res.json()).toMatchObject({
        release: RELEASE,
        schema_revision: SCHEMA_REVISION,
        protocol: { current: PROTOCOL.current, previous: PROTOCOL.previous },
      });
      const ours = new Set(['release', 'schema_revision', 'protocol']);
      if (haveReference) expect(keys(res.json()).filter((k) => !ours.has(k))).toEqual(keys(observedBody('02-v2.json')));
    });
  });

  describe('microversions', () => {
    it.each([
      [undefined, '2.0'],
      ['accelerator 2.1', '2.1'],
      ['accelerator 2.3', '2.3'],
      ['accelerator latest', '2.3'],
      ['2.2', '2.2'],
      ['compute 2.99', '2.0'],
      ['compute 2.1, accelerator 2.2', '2.2'],
    ])('header %s → runs at %s', async (header, used) => {
      const res = await c.call('GET', '/v2/devices', { headers: header ? v(header) : persona.admin });
      expect(res.statusCode).toBe(200);
      expect(res.headers['openstack-api-version']).toBe(`accelerator ${used}`);
    });

    it.each(['accelerator 2.99', 'accelerator 3.0', 'accelerator 1.9', 'accelerator banana', 'accelerator 2.x'])(
      'header %s → 406 with the supported range',
      async (header) => {
        const res = await c.call('GET', '/v2/devices', { headers: v(header) });
        expect(res.statusCode).toBe(406);
        expect(res.headers['openstack-api-minimum-version']).toBe('2.0');
        expect(res.headers['openstack-api-maximum-version']).toBe('2.3');
        expect(fault(res)).toMatch(/OpenStack-API-Version|supported version range/);
      },
    );

    it('device status appears at 2.3 only', async () => {
      const at22 = (await c.call('GET', `/v2/devices/${deviceUuid}`, { headers: v('accelerator 2.2') })).json<Obj>();
      const at23 = (await c.call('GET', `/v2/devices/${deviceUuid}`, { headers: v('accelerator 2.3') })).json<Obj>();
      expect(at22.status).toBeUndefined();
      expect(at23.status).toBe('enabled');
    });

    it('a device profile by name needs 2.2 (406 below)', async () => {
      const old = await c.call('GET', '/v2/device_profiles/fake-dp-5c6fc9f1', { headers: persona.admin });
      expect(old.statusCode).toBe(406);
      expect(fault(old)).toBe('Request not acceptable. The minimal required API version should be 2.2');
      const ok = await c.call('GET', '/v2/device_profiles/fake-dp-5c6fc9f1', { headers: v('accelerator 2.2') });
      expect(ok.statusCode).toBe(200);
      expect(ok.json<{ device_profile: Obj }>().device_profile.uuid).toBe(profileUuid);
    });

    it('a bind with /project_id needs 2.1 (406 below) and an admin (403 otherwise)', async () => {
      const ops = [
        { op: 'add', path: '/hostname', value: HOST },
        { op: 'add', path: '/device_rp_uuid', value: c.rpOf(HOST) },
        { op: 'add', path: '/instance_uuid', value: 'e83c3a0b-9625-4ed9-b19b-4d616bad29da' },
        { op: 'add', path: '/project_id', value: 'p' },
      ];
      const old = await c.call('PATCH', '/v2/accelerator_requests', { headers: persona.admin, body: { [arq]: ops } });
      expect(old.statusCode).toBe(406);
      expect(fault(old)).toBe('Request not acceptable. The minimal required API version should be 2.1');
      const member = await c.call('PATCH', '/v2/accelerator_requests', {
        headers: { ...persona.member, 'openstack-api-version': 'accelerator 2.1' },
        body: { [arq]: ops },
      });
      expect(member.statusCode).toBe(403);
      const ok = await c.call('PATCH', '/v2/accelerator_requests', { headers: v('accelerator 2.1'), body: { [arq]: ops } });
      expect(ok.statusCode).toBe(202);
      expect(ok.headers['openstack-api-version']).toBe('accelerator 2.1');
      const shown = (await c.call('GET', `/v2/accelerator_requests/${arq}`, { headers: persona.admin })).json<Obj>();
      expect(shown).toMatchObject({ state: 'Bound', project_id: 'p' });
      expect(
        (
          await c.call('PATCH', '/v2/accelerator_requests', {
            headers: persona.admin,
            body: {
              [arq]: [
                { op: 'remove', path: '/hostname' },
                { op: 'remove', path: '/device_rp_uuid' },
                { op: 'remove', path: '/instance_uuid' },
              ],
            },
          })
        ).statusCode,
      ).toBe(202);
    });
  });

  describe.skipIf(!haveReference)('shapes match what Cyborg answers', () => {
    const itemKeys = (o: Obj, list: string) => keys((o[list] as Obj[])[0]!);

    it('devices (list, show, filter)', async () => {
      const list = (await c.call('GET', '/v2/devices', { headers: persona.admin })).json<Obj>();
      expect(itemKeys(list, 'devices')).toEqual(itemKeys(observedBody('04-devices-list.json'), 'devices'));
      const one = (await c.call('GET', `/v2/devices/${deviceUuid}`, { headers: persona.admin })).json<Obj>();
      expect(keys(one)).toEqual(keys(observedBody('05-device-get-one.json')));
      expect(keys(one)).toEqual(keys(sample('devices/devices-getone-resp.json')));
      expect(one).toMatchObject({ type: 'FPGA', vendor: '0xABCD', model: 'miss model info', vendor_board_info: 'fake_vendor_info', hostname: HOST });
      const fpga = (await c.call('GET', '/v2/devices?type=FPGA', { headers: persona.admin })).json<{ devices: Obj[] }>();
      expect(fpga.devices.map((d) => d.type)).toEqual(['FPGA']);
      expect((await c.call('GET', '/v2/devices?type=GPU', { headers: persona.admin })).json<{ devices: Obj[] }>().devices).toEqual([]);
    });

    it('deployables (list, show): rp_uuid is uuid3(DNS, name), attributes_list is text', async () => {
      const list = (await c.call('GET', '/v2/deployables', { headers: persona.admin })).json<Obj>();
      expect(itemKeys(list, 'deployables')).toEqual(itemKeys(observedBody('07-deployables-list.json'), 'deployables'));
      const one = (await c.call('GET', `/v2/deployables/${deployableUuid}`, { headers: persona.admin })).json<Obj>();
      expect(keys(one)).toEqual(keys(sample('deployables/deployables-getone-resp.json')));
      expect(one).toMatchObject({
        name: `${HOST}_FakeDevice`,
        num_accelerators: 16,
        driver_name: 'fake',
        rp_uuid: observedBody<Obj>('08-deployable-get-one.json').rp_uuid,
      });
      expect(JSON.parse(one.attributes_list as string)).toEqual(expect.arrayContaining([{ traits1: 'CUSTOM_FAKE_DEVICE' }, { rc: 'FPGA' }]));
      expect((one.links as Obj[]).map((l) => l.rel)).toEqual(['self', 'bookmark']);
    });

    it('attributes (list, filters, show) include the driver-reported ones with stable uuids', async () => {
      const list = (await c.call('GET', '/v2/attributes', { headers: persona.admin })).json<{ attributes: Obj[] }>();
      expect(itemKeys(list, 'attributes')).toEqual(itemKeys(observedBody('72-v10-attributes-list.json'), 'attributes'));
      expect(list.attributes.map((a) => a.key).sort()).toEqual(['rc', 'traits1']);
      const rc = (await c.call('GET', '/v2/attributes?key=rc', { headers: persona.admin })).json<{ attributes: Obj[] }>().attributes;
      expect(rc).toHaveLength(1);
      const byDep = (await c.call('GET', `/v2/attributes?deployable_id=${rc[0]!.deployable_id}`, { headers: persona.admin })).json<{ attributes: Obj[] }>()
        .attributes;
      expect(byDep).toHaveLength(2);
      const one = (await c.call('GET', `/v2/attributes/${rc[0]!.uuid}`, { headers: persona.admin })).json<Obj>();
      expect(keys(one)).toEqual(keys(observedBody('73-v10-attribute-get-one.json')));
      expect(keys(one)).toEqual(keys(sample('attributes/attributes-getone-resp.json')));
      expect(
        (await c.call('GET', '/v2/attributes', { headers: persona.admin }))
          .json<{ attributes: Obj[] }>()
          .attributes.map((a) => a.uuid)
          .sort(),
      ).toEqual(list.attributes.map((a) => a.uuid).sort());
    });

    it('device profiles (create, list, show with Python-str timestamps)', async () => {
      const list = (await c.call('GET', '/v2/device_profiles', { headers: persona.admin })).json<Obj>();
      expect(itemKeys(list, 'device_profiles')).toEqual(itemKeys(observedBody('12-device-profiles-list.json'), 'device_profiles'));
      const one = (await c.call('GET', `/v2/device_profiles/${profileUuid}`, { headers: persona.admin })).json<{ device_profile: Obj }>();
      expect(keys(one)).toEqual(['device_profile']);
      expect(keys(one.device_profile)).toEqual(keys(observedBody<{ device_profile: Obj }>('13-device-profile-get-by-uuid.json').device_profile));
      expect(one.device_profile.created_at).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+00:00$/);
      expect(one.device_profile.updated_at).toBe('None');
      const created = await c.call('POST', '/v2/device_profiles', {
        headers: persona.admin,
        body: [{ name: 'shape-dp', groups: [{ 'resources:FPGA': 1, 'trait: CUSTOM_FAKE_DEVICE': 'required' }] }],
      });
      expect(created.statusCode).toBe(201);
      expect(keys(created.json())).toEqual(keys(observedBody('11-device-profile-create.json')));
      // Values are stored as strings; names after the colon are trimmed.
      expect(created.json<Obj>().groups).toEqual([{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }]);
      expect(created.json<Obj>().created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    });

    it('accelerator requests always carry every field (project_id, attach_handle_uuid included)', async () => {
      const expected = [...new Set([...keys(observedBody('17-arq-get-initial.json')), 'attach_handle_uuid'])].sort();
      const one = (await c.call('GET', `/v2/accelerator_requests/${arq}`, { headers: persona.admin })).json<Obj>();
      expect(keys(one)).toEqual(expected);
      expect(keys(one)).toEqual(keys(sample('accelerator_requests/accelerator_requests-getone-resp.json')));
      const list = (await c.call('GET', '/v2/accelerator_requests', { headers: persona.admin })).json<{ arqs: Obj[] }>();
      for (const a of list.arqs) expect(keys(a)).toEqual(expected);
      expect(one).toMatchObject({ attach_handle_type: '', attach_handle_info: {}, attach_handle_uuid: null });
    });
  });

  it("the OpenAPI document covers the Cyborg v2 routes and this project's own", async () => {
    const res = await c.call('GET', '/openapi.json');
    expect(res.statusCode).toBe(200);
    const doc = res.json<{ openapi: string; paths: Record<string, Record<string, unknown>> }>();
    expect(doc.openapi).toMatch(/^3\./);
    for (const path of [
      '/',
      '/v2/',
      '/v2/devices',
      '/v2/devices/{uuid}/enable',
      '/v2/deployables/{uuid}/program',
      '/v2/attributes',
      '/v2/device_profiles',
      '/v2/accelerator_requests',
      '/v2/accelerator_requests/{uuid}',
      '/cyborg/v1/accelerators',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(Object.keys(doc.paths['/v2/accelerator_requests']!).sort()).toEqual(['delete', 'get', 'patch', 'post']);
    // The unversioned copies are served but not documented twice.
    expect(doc.paths['/devices']).toBeUndefined();
  });

  describe('every error status of the reference', () => {
    it('400: not a uuid, malformed JSON, bad group key, patch errors, bad bind_state, neither arqs nor instance', async () => {
      const cases: [string, string, unknown?, string?][] = [
        ['GET', '/v2/accelerator_requests/not-a-uuid'],
        ['GET', '/v2/devices/not-a-uuid'],
        ['GET', '/v2/deployables/not-a-uuid'],
        ['GET', '/v2/attributes/not-a-uuid'],
        ['POST', '/v2/device_profiles', undefined, '{"name": "x", groups: ['],
        ['POST', '/v2/accelerator_requests', undefined, '{not json'],
        ['POST', '/v2/device_profiles', [{ name: 'badkey', groups: [{ 'foo:bar': '1' }] }]],
        ['POST', '/v2/device_profiles', [{ name: 'nogroups' }]],
        ['POST', '/v2/accelerator_requests', {}],
        ['PATCH', '/v2/accelerator_requests', { [arq]: [{ op: 'add', path: '/hostname', value: HOST }] }],
        ['PATCH', '/v2/accelerator_requests', { [arq]: [{ op: 'replace', path: '/hostname', value: 'x' }] }],
        ['GET', '/v2/accelerator_requests?bind_state=started'],
        ['DELETE', '/v2/accelerator_requests'],
      ];
      for (const [method, url, body, raw] of cases) {
        const res = await c.call(method as 'GET', url, { headers: persona.admin, body, raw });
        expect(res.statusCode, `${method} ${url}`).toBe(400);
        expect(fault(res), `${method} ${url}`).not.toBe('');
      }
      const badKey = await c.call('POST', '/v2/device_profiles', { headers: persona.admin, body: [{ name: 'badkey', groups: [{ 'foo:bar': '1' }] }] });
      expect(fault(badKey)).toBe('Device profile group keys must be of the form ^(resources:|trait:|accel:)');
      const missing = await c.call('PATCH', '/v2/accelerator_requests', {
        headers: persona.admin,
        body: { [arq]: [{ op: 'add', path: '/hostname', value: HOST }] },
      });
      expect(fault(missing)).toBe("Couldn't apply patch. Reason: Fields absent in patch device_rp_uuid,instance_uuid");
      const malformed = await c.call('POST', '/v2/accelerator_requests', { headers: persona.admin, raw: '{not json' });
      expect(fault(malformed)).toBe('Request is not in valid JSON format');
    });

    it('401: in keystone mode, a request without a token, whatever identity headers it forges', async () => {
      const k = await startCyborg({ hosts: ['keystone-host'], v2: { authStrategy: 'keystone' } });
      try {
        expect((await k.call('GET', '/v2/devices', { headers: persona.admin })).statusCode).toBe(401);
        expect((await k.call('GET', '/v2/devices', { headers: { ...persona.admin, 'x-identity-status': 'Confirmed' } })).statusCode).toBe(401);
        expect((await k.call('GET', '/v2')).statusCode).toBe(200);
      } finally {
        await k.stop();
      }
    });

    it('403: a policy failure names the rule', async () => {
      const res = await c.call('POST', '/v2/device_profiles', { headers: persona.member, body: [{ name: 'nope', groups: [FAKE_PROFILE] }] });
      expect(res.statusCode).toBe(403);
      expect(fault(res)).toBe("Policy doesn't allow cyborg:device_profile:create to be performed.");
    });

    it('404: unknown ARQ, profile, device, deployable, attribute, resource provider, path', async () => {
      const unknown = '85e4fd81-4906-4155-851d-cd0f814a9161';
      const cases: [string, string, unknown?][] = [
        ['GET', `/v2/accelerator_requests/${unknown}`],
        ['DELETE', `/v2/accelerator_requests?arqs=${unknown}`],
        ['PATCH', '/v2/accelerator_requests', { [unknown]: [{ op: 'remove', path: '/hostname' }] }],
        ['POST', '/v2/accelerator_requests', { device_profile_name: 'no-such-profile' }],
        ['POST', '/v2/accelerator_requests', { device_profile_name: '' }],
        ['GET', `/v2/device_profiles/${unknown}`],
        ['DELETE', `/v2/device_profiles/${unknown}`],
        ['DELETE', '/v2/device_profiles?value=no-such-profile'],
        ['GET', `/v2/devices/${unknown}`],
        ['GET', `/v2/deployables/${unknown}`],
        ['GET', `/v2/attributes/${unknown}`],
        ['GET', '/v2/nonexistent'],
      ];
      for (const [method, url, body] of cases) {
        const res = await c.call(method as 'GET', url, { headers: persona.admin, body });
        expect(res.statusCode, `${method} ${url}`).toBe(404);
        expect(res.json<Obj>().error_message, `${method} ${url}`).toBeTypeOf('string');
      }
      const bogusRp = await c.call('PATCH', '/v2/accelerator_requests', {
        headers: persona.admin,
        body: {
          [arq]: [
            { op: 'add', path: '/hostname', value: HOST },
            { op: 'add', path: '/device_rp_uuid', value: 'c2bbc215-6e29-4474-b9a3-c2c6e0f16aa5' },
            { op: 'add', path: '/instance_uuid', value: '0526d287-3268-4811-915f-71498baa1b3f' },
          ],
        },
      });
      expect(bogusRp.statusCode).toBe(404);
      expect(fault(bogusRp)).toBe('Deployable not found with resource provider uuid=c2bbc215-6e29-4474-b9a3-c2c6e0f16aa5');
      // Refused before anything moved: the ARQ is still bindable.
      expect((await c.call('GET', `/v2/accelerator_requests/${arq}`, { headers: persona.admin })).json<Obj>().state).toBe('Unbound');
    });

    it('409: a duplicate profile name; a profile still used by ARQs', async () => {
      const dup = await c.call('POST', '/v2/device_profiles', { headers: persona.admin, body: [{ name: 'fake-dp-5c6fc9f1', groups: [FAKE_PROFILE] }] });
      expect(dup.statusCode).toBe(409);
      expect(fault(dup)).toBe('A device_profile with name fake-dp-5c6fc9f1 already exists.');
      expect((await c.call('DELETE', `/v2/device_profiles/${profileUuid}`, { headers: persona.admin })).statusCode).toBe(409);
    });

    it("423: Nova's resolved query while an instance's ARQ is still binding (empty body)", async () => {
      const fake = c.fakes[0]!;
      fake.slowDown('attach', 300);
      const created = await c.call('POST', '/v2/accelerator_requests', { headers: persona.admin, body: { device_profile_name: 'fake-dp-5c6fc9f1' } });
      const u = created.json<{ arqs: { uuid: string }[] }>().arqs[0]!.uuid;
      const instance = '2f0c4e5a-8b1d-4c6e-9f3a-7d5b1e2c4a60';
      const bind = c.call('PATCH', '/v2/accelerator_requests', {
        headers: persona.admin,
        body: {
          [u]: [
            { op: 'add', path: '/hostname', value: HOST },
            { op: 'add', path: '/device_rp_uuid', value: c.rpOf(HOST) },
            { op: 'add', path: '/instance_uuid', value: instance },
          ],
        },
      });
      let locked: { statusCode: number; body: string } | undefined;
      for (let i = 0; i < 1000 && !locked; i++) {
        const res = await c.call('GET', `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`, { headers: persona.admin });
        if (res.statusCode === 423) locked = res;
        else if (res.json<{ arqs: Obj[] }>().arqs.length > 0) break;
        await new Promise((r) => setImmediate(r));
      }
      expect(locked?.statusCode).toBe(423);
      expect(locked?.body).toBe('');
      expect((await bind).statusCode).toBe(202);
      fake.slowDown('attach', 0);
      expect((await c.call('GET', `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`, { headers: persona.admin })).statusCode).toBe(200);
      expect((await c.call('DELETE', `/v2/accelerator_requests?instance=${instance}`, { headers: persona.admin })).statusCode).toBe(204);
    });

    it('503: the conductor is shutting down', async () => {
      const s = await startCyborg({ hosts: ['stopping-host'] });
      await s.call('POST', '/v2/device_profiles', { headers: persona.admin, body: [{ name: 'dp', groups: [FAKE_PROFILE] }] });
      await s.conductor.stop();
      const res = await s.call('POST', '/v2/accelerator_requests', { headers: persona.admin, body: { device_profile_name: 'dp' } });
      expect(res.statusCode).toBe(503);
      await s.stop();
    });
  });
});
