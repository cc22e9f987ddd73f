import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enableAll, FAKE_PROFILE, fault, persona, startCyborg, type Cyborg } from './harness.js';

const U = '85e4fd81-4906-4155-851d-cd0f814a9161';
type Case = [method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown, raw?: string];

/**
 * Bad input on every v2 route: malformed JSON, wrong types, unknown ids, a bogus RP uuid, an
 * invalid microversion. Each must be a 4xx with a message a person can act on — never a 500.
 */
describe('bad input on every v2 route → 4xx with a clear message', () => {
  let c: Cyborg;
  let arq = '';
  let deployable = '';
  beforeAll(async () => {
    c = await startCyborg({ hosts: ['bad-input-host'] });
    await enableAll(c);
    await c.call('POST', '/v2/device_profiles', { headers: persona.admin, body: [{ name: 'dp', groups: [FAKE_PROFILE] }] });
    arq = (await c.call('POST', '/v2/accelerator_requests', { headers: persona.admin, body: { device_profile_name: 'dp' } })).json<{ arqs: { uuid: string }[] }>().arqs[0]!.uuid;
    deployable = (await c.call('GET', '/v2/deployables', { headers: persona.admin })).json<{ deployables: { uuid: string }[] }>().deployables[0]!.uuid;
  });
  afterAll(async () => c.stop());

  const cases = (): Case[] => [
    // device profiles
    ['POST', '/v2/device_profiles', undefined, '[{"name": '],
    ['POST', '/v2/device_profiles', { name: 'not-a-list', groups: [FAKE_PROFILE] }],
    ['POST', '/v2/device_profiles', []],
    ['POST', '/v2/device_profiles', [{ name: 'a', groups: [FAKE_PROFILE] }, { name: 'b', groups: [FAKE_PROFILE] }]],
    ['POST', '/v2/device_profiles', [{ name: 'bad name!', groups: [FAKE_PROFILE] }]],
    ['POST', '/v2/device_profiles', [{ name: 42, groups: [FAKE_PROFILE] }]],
    ['POST', '/v2/device_profiles', [{ name: 'x', groups: [] }]],
    ['POST', '/v2/device_profiles', [{ name: 'x', groups: 'resources:FPGA=1' }]],
    ['POST', '/v2/device_profiles', [{ name: 'x', groups: [['resources:FPGA']] }]],
    ['POST', '/v2/device_profiles', [{ name: 'x', groups: [{ 'resources:FPGA': 'one' }] }]],
    ['POST', '/v2/device_profiles', [{ name: 'x', groups: [{ 'resources:WIDGET': '1' }] }]],
    ['POST', '/v2/device_profiles', [{ name: 'x', groups: [{ 'trait:HW_CPU_X86_AVX': 'required' }] }]],
    ['POST', '/v2/device_profiles', [{ name: 'x', groups: [{ 'trait:CUSTOM_X': 'maybe' }] }]],
    ['POST', '/v2/device_profiles', [{ name: 'x', groups: [{ 'resources:FPGA': { n: 1 } }] }]],
    ['POST', '/v2/device_profiles', [{ name: 'x', uuid: 'not-a-uuid', groups: [FAKE_PROFILE] }]],
    ['GET', '/v2/device_profiles/no-such-name'],
    ['GET', `/v2/device_profiles/${U}`],
    ['DELETE', `/v2/device_profiles/${U}`],
    ['DELETE', '/v2/device_profiles'],
    // accelerator requests
    ['POST', '/v2/accelerator_requests', undefined, '{"device_profile_name": '],
    ['POST', '/v2/accelerator_requests', { device_profile_name: 7 }],
    ['POST', '/v2/accelerator_requests', ['dp']],
    ['POST', '/v2/accelerator_requests', { device_profile_name: 'nope' }],
    ['GET', '/v2/accelerator_requests?bind_state=bound'],
    ['GET', '/v2/accelerator_requests/not-a-uuid'],
    ['GET', `/v2/accelerator_requests/${U}`],
    ['PATCH', '/v2/accelerator_requests', undefined, '{'],
    ['PATCH', '/v2/accelerator_requests', []],
    ['PATCH', '/v2/accelerator_requests', {}],
    ['PATCH', '/v2/accelerator_requests', { [arq]: 'add' }],
    ['PATCH', '/v2/accelerator_requests', { [arq]: [{ op: 'add', path: '/hostname' }] }],
    ['PATCH', '/v2/accelerator_requests', { [arq]: [{ op: 'add', path: '/hostname', value: 5 }, { op: 'add', path: '/device_rp_uuid', value: U }, { op: 'add', path: '/instance_uuid', value: U }] }],
    ['PATCH', '/v2/accelerator_requests', { [arq]: [{ op: 'add', path: '/flavor', value: 'x' }] }],
    ['PATCH', '/v2/accelerator_requests', { [arq]: [{ op: 'add', path: '/hostname', value: 'h' }, { op: 'remove', path: '/device_rp_uuid' }] }],
    ['PATCH', '/v2/accelerator_requests', { [arq]: [{ op: 'add', path: '/hostname', value: 'h' }, { op: 'add', path: '/device_rp_uuid', value: 'not-a-uuid' }, { op: 'add', path: '/instance_uuid', value: U }] }],
    ['PATCH', '/v2/accelerator_requests', { [arq]: [{ op: 'add', path: '/hostname', value: 'h' }, { op: 'add', path: '/device_rp_uuid', value: U }, { op: 'add', path: '/instance_uuid', value: U }] }],
    ['PATCH', '/v2/accelerator_requests', { 'not-a-uuid': [{ op: 'remove', path: '/hostname' }] }],
    ['PATCH', `/v2/accelerator_requests/${arq}`, { [U]: [{ op: 'remove', path: '/hostname' }] }],
    ['PATCH', `/v2/accelerator_requests/${U}`, [{ op: 'remove', path: '/hostname' }]],
    ['DELETE', '/v2/accelerator_requests'],
    ['DELETE', `/v2/accelerator_requests?arqs=${arq}&instance=${U}`],
    ['DELETE', '/v2/accelerator_requests?arqs=,'],
    ['DELETE', `/v2/accelerator_requests?arqs=${U}`],
    ['DELETE', '/v2/accelerator_requests/not-a-uuid'],
    // devices, deployables, attributes
    ['GET', '/v2/devices/not-a-uuid'],
    ['GET', `/v2/devices/${U}`],
    ['POST', `/v2/devices/${U}/enable`],
    ['POST', '/v2/devices/not-a-uuid/disable'],
    ['GET', '/v2/deployables/not-a-uuid'],
    ['GET', `/v2/deployables/${U}`],
    ['PATCH', `/v2/deployables/${deployable}/program`, { image_uuid: U }],
    ['PATCH', `/v2/deployables/${deployable}/program`, [{ op: 'replace', path: '/program', value: [] }]],
    ['PATCH', `/v2/deployables/${deployable}/program`, [{ op: 'add', path: '/program', value: [{ image_uuid: U }] }]],
    ['PATCH', `/v2/deployables/${U}/program`, [{ op: 'replace', path: '/program', value: [{ image_uuid: U }] }]],
    ['PATCH', `/v2/deployables/${deployable}`, undefined, '[{'],
    ['GET', '/v2/attributes?deployable_id=abc'],
    ['GET', '/v2/attributes/not-a-uuid'],
    ['GET', `/v2/attributes/${U}`],
    ['POST', '/v2/attributes', { deployable_id: 'one', key: 'k', value: 'v' }],
    ['POST', '/v2/attributes', { deployable_id: 1, key: 'k' }],
    ['POST', '/v2/attributes', { deployable_id: 999, key: 'k', value: 'v' }],
    ['POST', '/v2/attributes', undefined, 'key=k'],
    ['DELETE', `/v2/attributes/${U}`],
    // the unversioned forms behave the same
    ['GET', '/accelerator_requests/not-a-uuid'],
    ['POST', '/device_profiles', undefined, '{'],
  ];

  it('each answers 4xx in Cyborg\'s error body, with a message', async () => {
    const failures: string[] = [];
    for (const [method, url, body, raw] of cases()) {
      const res = await c.call(method, url, { headers: persona.admin, body, raw });
      const what = `${method} ${url} ${raw ?? JSON.stringify(body) ?? ''}`;
      if (res.statusCode < 400 || res.statusCode >= 500) {
        failures.push(`${what} → ${res.statusCode} ${res.body}`);
        continue;
      }
      const message = fault(res);
      if (message.length < 10) failures.push(`${what} → ${res.statusCode} with an unclear message "${message}"`);
    }
    expect(failures).toEqual([]);
  });

  it('an invalid microversion on any route is a 406', async () => {
    for (const url of ['/v2/devices', '/v2/accelerator_requests', '/v2/device_profiles', '/v2/deployables', '/v2/attributes', '/devices']) {
      const res = await c.call('GET', url, { headers: { ...persona.admin, 'openstack-api-version': 'accelerator 2.x' } });
      expect(res.statusCode, url).toBe(406);
      expect(fault(res)).toBe('Invalid value for OpenStack-API-Version header');
    }
  });

  it('a non-JSON content type is refused with 415', async () => {
    const res = await c.app.inject({ method: 'POST', url: '/v2/accelerator_requests', headers: { ...persona.admin, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'device_profile_name=dp' });
    expect(res.statusCode).toBe(415);
    expect(fault(res)).not.toBe('');
  });
});
