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
    arq = (await c.call('POST', '/v2/accelerator_requests', { headers: persona.admin, body: { device_profile_name: 'dp' } })).json<{
      arqs: { uuid: string }[];
    }>().arqs[0]!.uuid;
    deployable = (await c.call('GET', '/v2/deployables', { headers: persona.admin })).json<{ deployables: { uuid: string }[] }>().deployables[0]!.uuid;
  });
  afterAll(async () => c.stop());

  const cases = (): Case[] => [
    // device profiles
    ['POST', '/v2/device_profiles', undefined, '[{"name": '],
    ['POST', '/v2/device_profiles', { name: 'not-a-list', groups: [FAKE_PROFILE] }],
    ['POST', '/v2/device_profiles', []],
    [
      'POST',
      '/v2/device_profiles',
      [
        { name: 'a', groups: [FAKE_PROFILE] },
        { name: 'b', groups: [FAKE_PROFILE] },
      ],
    ],
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
    [
      'PATCH',
      '/v2/accelerator_requests',
      {
        [arq]: [
          { op: 'add', path: '/hostname', value: 5 },
          { op: 'add', path: '/device_rp_uuid', value: U },
          { op: 'add', path: '/instance_uuid', value: U },
        ],
      },
    ],
    ['PATCH', '/v2/accelerator_requests', { [arq]: [{ op: 'add', path: '/flavor', value: 'x' }] }],
    [
      'PATCH',
      '/v2/accelerator_requests',
      {
        [arq]: [
          { op: 'add', path: '/hostname', value: 'h' },
          { op: 'remove', path: '/device_rp_uuid' },
        ],
      },
    ],
    [
      'PATCH',
      '/v2/accelerator_requests',
      {
        [arq]: [
          { op: 'add', path: '/hostname', value: 'h' },
          { op: 'add', path: '/device_rp_uuid', value: 'not-a-uuid' },
          { op: 'add', path: '/instance_uuid', value: U },
        ],
      },
    ],
    [
      'PATCH',
      '/v2/accelerator_requests',
      {
        [arq]: [
          { op: 'add', path: '/hostname', value: 'h' },
          { op: 'add', path: '/device_rp_uuid', value: U },
          { op: 'add', path: '/instance_uuid', value: U },
        ],
      },
    ],
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

  it("each answers 4xx in Cyborg's error body, with a message", async () => {
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
    const res = await c.app.inject({
      method: 'POST',
      url: '/v2/accelerator_requests',
      headers: { ...persona.admin, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'device_profile_name=dp',
    });
    expect(res.statusCode).toBe(415);
    expect(fault(res)).not.toBe('');
  });
});

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
/** One input of one route: where a value goes, the field the 400 must name, and its column's bound. */
interface Input {
  route: string;
  field: string;
  max: number;
  /** Where the value travels: body (JSON: any value), or a URL (query / path: strings only). */
  at: 'body' | 'url' | 'header';
  build: (v: unknown) => { method: Method; url: string; body?: unknown; headers?: Record<string, string> };
  /** A value of the wrong JSON type, for body fields. */
  wrongType?: unknown;
  /** Instead of the standard values: for lists (too many items) and the like. */
  variants?: [what: string, value: unknown][];
}

const enc = (v: unknown) => encodeURIComponent(String(v));

/**
 * Input PostgreSQL would refuse must be refused by the schema, naming the field: tempest found a
 * 256-character device-profile name answered 503 ("retry"), for input that can never succeed.
 * Every string, number and list of every route: one longer than its column, one with a NUL, one
 * with an unpaired surrogate (JSON bodies only: a URL cannot carry one) and one of the wrong type.
 */
describe('bounds on every input: too long, NUL, lone surrogate, wrong type → 400 naming the field', () => {
  let c: Cyborg;
  let arq = '';
  let deployable = '';
  let accelerator = '';
  const U = '85e4fd81-4906-4155-851d-cd0f814a9161';
  beforeAll(async () => {
    c = await startCyborg({ hosts: ['bounds-host'] });
    await enableAll(c);
    await c.call('POST', '/v2/device_profiles', { headers: persona.admin, body: [{ name: 'dp', groups: [FAKE_PROFILE] }] });
    arq = (await c.call('POST', '/v2/accelerator_requests', { headers: persona.admin, body: { device_profile_name: 'dp' } })).json<{
      arqs: { uuid: string }[];
    }>().arqs[0]!.uuid;
    deployable = (await c.call('GET', '/v2/deployables', { headers: persona.admin })).json<{ deployables: { uuid: string }[] }>().deployables[0]!.uuid;
    accelerator = deployable;
  });
  afterAll(async () => c.stop());

  const bind = (field: string, v: unknown) => [
    { op: 'add', path: '/hostname', value: field === 'hostname' ? v : 'bounds-host' },
    { op: 'add', path: '/device_rp_uuid', value: U },
    { op: 'add', path: '/instance_uuid', value: U },
  ];
  const inputs = (): Input[] => [
    // Cyborg v2: device profiles
    {
      route: 'POST /v2/device_profiles',
      field: 'body/0/name',
      max: 255,
      at: 'body',
      wrongType: 42,
      build: (v) => ({ method: 'POST', url: '/v2/device_profiles', body: [{ name: v, groups: [FAKE_PROFILE] }] }),
    },
    {
      route: 'POST /v2/device_profiles',
      field: 'body/0/description',
      max: 1024,
      at: 'body',
      wrongType: [],
      build: (v) => ({ method: 'POST', url: '/v2/device_profiles', body: [{ name: 'd1', description: v, groups: [FAKE_PROFILE] }] }),
    },
    {
      route: 'POST /v2/device_profiles',
      field: 'body/0/uuid',
      max: 36,
      at: 'body',
      wrongType: 7,
      build: (v) => ({ method: 'POST', url: '/v2/device_profiles', body: [{ name: 'd2', uuid: v, groups: [FAKE_PROFILE] }] }),
    },
    {
      route: 'POST /v2/device_profiles',
      field: 'body/0/groups/0/accel:x',
      max: 255,
      at: 'body',
      wrongType: {},
      build: (v) => ({ method: 'POST', url: '/v2/device_profiles', body: [{ name: 'd3', groups: [{ ...FAKE_PROFILE, 'accel:x': v }] }] }),
    },
    {
      route: 'POST /v2/device_profiles',
      field: 'body/0/groups/0 key',
      max: 255,
      at: 'body',
      build: (v) => ({ method: 'POST', url: '/v2/device_profiles', body: [{ name: 'd4', groups: [{ ...FAKE_PROFILE, [`accel:${String(v)}`]: '1' }] }] }),
    },
    {
      route: 'POST /v2/device_profiles',
      field: 'body/0/groups',
      max: 64,
      at: 'body',
      variants: [
        ['too many', Array.from({ length: 65 }, () => FAKE_PROFILE)],
        ['wrong type', 'resources:FPGA=1'],
      ],
      build: (v) => ({ method: 'POST', url: '/v2/device_profiles', body: [{ name: 'd5', groups: v }] }),
    },
    {
      route: 'GET /v2/device_profiles',
      field: 'querystring/name',
      max: 16_384,
      at: 'url',
      build: (v) => ({ method: 'GET', url: `/v2/device_profiles?name=${enc(v)}` }),
    },
    { route: 'GET /v2/device_profiles/{id}', field: 'params/id', max: 255, at: 'url', build: (v) => ({ method: 'GET', url: `/v2/device_profiles/${enc(v)}` }) },
    {
      route: 'DELETE /v2/device_profiles/{id}',
      field: 'params/uuid',
      max: 255,
      at: 'url',
      build: (v) => ({ method: 'DELETE', url: `/v2/device_profiles/${enc(v)}` }),
    },
    {
      route: 'DELETE /v2/device_profiles',
      field: 'querystring/value',
      max: 16_384,
      at: 'url',
      build: (v) => ({ method: 'DELETE', url: `/v2/device_profiles?value=${enc(v)}` }),
    },
    // accelerator requests
    {
      route: 'POST /v2/accelerator_requests',
      field: 'body/device_profile_name',
      max: 255,
      at: 'body',
      wrongType: ['dp'],
      build: (v) => ({ method: 'POST', url: '/v2/accelerator_requests', body: { device_profile_name: v } }),
    },
    {
      route: 'GET /v2/accelerator_requests',
      field: 'querystring/instance',
      max: 255,
      at: 'url',
      build: (v) => ({ method: 'GET', url: `/v2/accelerator_requests?instance=${enc(v)}` }),
    },
    {
      route: 'GET /v2/accelerator_requests',
      field: 'querystring/bind_state',
      max: 32,
      at: 'url',
      build: (v) => ({ method: 'GET', url: `/v2/accelerator_requests?bind_state=${enc(v)}` }),
    },
    {
      route: 'GET /v2/accelerator_requests/{uuid}',
      field: 'params/uuid',
      max: 36,
      at: 'url',
      build: (v) => ({ method: 'GET', url: `/v2/accelerator_requests/${enc(v)}` }),
    },
    {
      route: 'PATCH /v2/accelerator_requests',
      field: '/hostname',
      max: 255,
      at: 'body',
      wrongType: 5,
      build: (v) => ({ method: 'PATCH', url: '/v2/accelerator_requests', body: { [arq]: bind('hostname', v) } }),
    },
    {
      route: 'PATCH /v2/accelerator_requests',
      field: `body/${'{arq}'}/0/op`,
      max: 32,
      at: 'body',
      wrongType: 1,
      build: (v) => ({ method: 'PATCH', url: '/v2/accelerator_requests', body: { [arq]: [{ op: v, path: '/hostname', value: 'h' }] } }),
    },
    {
      route: 'PATCH /v2/accelerator_requests',
      field: 'body key',
      max: 36,
      at: 'body',
      build: (v) => ({ method: 'PATCH', url: '/v2/accelerator_requests', body: { [String(v)]: [{ op: 'remove', path: '/hostname' }] } }),
    },
    {
      route: 'PATCH /v2/accelerator_requests/{uuid}',
      field: `body/0/path`,
      max: 255,
      at: 'body',
      wrongType: null,
      build: (v) => ({ method: 'PATCH', url: `/v2/accelerator_requests/${arq}`, body: [{ op: 'remove', path: v }] }),
    },
    {
      route: 'DELETE /v2/accelerator_requests',
      field: 'querystring/instance',
      max: 255,
      at: 'url',
      build: (v) => ({ method: 'DELETE', url: `/v2/accelerator_requests?instance=${enc(v)}` }),
    },
    {
      route: 'DELETE /v2/accelerator_requests',
      field: 'querystring/arqs',
      max: 16_384,
      at: 'url',
      build: (v) => ({ method: 'DELETE', url: `/v2/accelerator_requests?arqs=${enc(v)}` }),
    },
    // devices, deployables, attributes
    { route: 'GET /v2/devices', field: 'querystring/vendor', max: 255, at: 'url', build: (v) => ({ method: 'GET', url: `/v2/devices?vendor=${enc(v)}` }) },
    { route: 'GET /v2/devices', field: 'querystring/hostname', max: 255, at: 'url', build: (v) => ({ method: 'GET', url: `/v2/devices?hostname=${enc(v)}` }) },
    { route: 'GET /v2/devices', field: 'querystring/type', max: 16, at: 'url', build: (v) => ({ method: 'GET', url: `/v2/devices?type=${enc(v)}` }) },
    {
      route: 'POST /v2/devices/{uuid}/enable',
      field: 'params/uuid',
      max: 36,
      at: 'url',
      build: (v) => ({ method: 'POST', url: `/v2/devices/${enc(v)}/enable` }),
    },
    { route: 'GET /v2/deployables', field: 'querystring/name', max: 255, at: 'url', build: (v) => ({ method: 'GET', url: `/v2/deployables?name=${enc(v)}` }) },
    {
      route: 'PATCH /v2/deployables/{uuid}/program',
      field: 'body/0/value/0/image_uuid',
      max: 255,
      at: 'body',
      wrongType: 3,
      build: (v) => ({
        method: 'PATCH',
        url: `/v2/deployables/${deployable}/program`,
        body: [{ op: 'replace', path: '/program', value: [{ image_uuid: v }] }],
      }),
    },
    { route: 'GET /v2/attributes', field: 'querystring/key', max: 255, at: 'url', build: (v) => ({ method: 'GET', url: `/v2/attributes?key=${enc(v)}` }) },
    {
      route: 'POST /v2/attributes',
      field: 'body/key',
      max: 255,
      at: 'body',
      wrongType: true,
      build: (v) => ({ method: 'POST', url: '/v2/attributes', body: { deployable_id: 1, key: v, value: 'v' } }),
    },
    {
      route: 'POST /v2/attributes',
      field: 'body/value',
      max: 255,
      at: 'body',
      wrongType: { v: 1 },
      build: (v) => ({ method: 'POST', url: '/v2/attributes', body: { deployable_id: 1, key: 'k', value: v } }),
    },
    {
      route: 'GET /v2/devices (X-Project-Id)',
      field: 'x-project-id',
      max: 255,
      at: 'header',
      build: (v) => ({ method: 'GET', url: '/v2/devices', headers: { 'x-project-id': String(v) } }),
    },
    {
      route: 'GET /v2/devices (X-User-Id)',
      field: 'x-user-id',
      max: 251,
      at: 'header',
      build: (v) => ({ method: 'GET', url: '/v2/devices', headers: { 'x-user-id': String(v) } }),
    },
    // the same under the /accelerator mount and unversioned
    {
      route: 'POST /accelerator/v2/device_profiles',
      field: 'body/0/name',
      max: 255,
      at: 'body',
      wrongType: 42,
      build: (v) => ({ method: 'POST', url: '/accelerator/v2/device_profiles', body: [{ name: v, groups: [FAKE_PROFILE] }] }),
    },
    {
      route: 'POST /device_profiles',
      field: 'body/0/name',
      max: 255,
      at: 'body',
      wrongType: 42,
      build: (v) => ({ method: 'POST', url: '/device_profiles', body: [{ name: v, groups: [FAKE_PROFILE] }] }),
    },
    // this project's operator API
    {
      route: 'GET /cyborg/v1/accelerators',
      field: 'querystring/host',
      max: 255,
      at: 'url',
      build: (v) => ({ method: 'GET', url: `/cyborg/v1/accelerators?host=${enc(v)}` }),
    },
    {
      route: 'GET /cyborg/v1/accelerators',
      field: 'querystring/state',
      max: 64,
      at: 'url',
      build: (v) => ({ method: 'GET', url: `/cyborg/v1/accelerators?state=${enc(v)}` }),
    },
    {
      route: 'GET /cyborg/v1/accelerators/{id}',
      field: 'params/id',
      max: 36,
      at: 'url',
      build: (v) => ({ method: 'GET', url: `/cyborg/v1/accelerators/${enc(v)}` }),
    },
    {
      route: 'POST /cyborg/v1/accelerators/{id}/program',
      field: 'body/bitstreamId',
      max: 255,
      at: 'body',
      wrongType: 9,
      build: (v) => ({ method: 'POST', url: `/cyborg/v1/accelerators/${accelerator}/program`, body: { bitstreamId: v } }),
    },
    {
      route: 'POST /cyborg/v1/accelerators/{id}/program',
      field: 'body/functionId',
      max: 255,
      at: 'body',
      wrongType: [],
      build: (v) => ({ method: 'POST', url: `/cyborg/v1/accelerators/${accelerator}/program`, body: { functionId: v } }),
    },
    {
      route: 'POST /cyborg/v1/accelerators/{id}/attach',
      field: 'body/projectId',
      max: 255,
      at: 'body',
      wrongType: 1,
      build: (v) => ({ method: 'POST', url: `/cyborg/v1/accelerators/${accelerator}/attach`, body: { instanceUuid: U, projectId: v } }),
    },
    {
      route: 'POST /cyborg/v1/accelerators/{id}/attach',
      field: 'body/instanceUuid',
      max: 36,
      at: 'body',
      wrongType: 1,
      build: (v) => ({ method: 'POST', url: `/cyborg/v1/accelerators/${accelerator}/attach`, body: { instanceUuid: v } }),
    },
    {
      route: 'POST /cyborg/v1/accelerators/{id}/enable (X-User-Id)',
      field: 'x-user-id',
      max: 251,
      at: 'header',
      build: (v) => ({ method: 'POST', url: `/cyborg/v1/accelerators/${accelerator}/enable`, headers: { 'x-user-id': String(v) } }),
    },
    { route: 'GET /cyborg/v1/hosts/{name}', field: 'params/name', max: 255, at: 'url', build: (v) => ({ method: 'GET', url: `/cyborg/v1/hosts/${enc(v)}` }) },
    { route: 'GET /cyborg/v1/history/{id}', field: 'params/id', max: 255, at: 'url', build: (v) => ({ method: 'GET', url: `/cyborg/v1/history/${enc(v)}` }) },
    {
      route: 'GET /cyborg/v1/history/{id}',
      field: 'querystring/limit',
      max: 0,
      at: 'url',
      build: (v) => ({ method: 'GET', url: `/cyborg/v1/history/${accelerator}?limit=${enc(v)}` }),
    },
    {
      route: 'GET /cyborg/v1/drivers',
      field: 'querystring/host',
      max: 255,
      at: 'url',
      build: (v) => ({ method: 'GET', url: `/cyborg/v1/drivers?host=${enc(v)}` }),
    },
    {
      route: 'POST /cyborg/v1/drivers/{ref}/install',
      field: 'body/host',
      max: 255,
      at: 'body',
      wrongType: 1,
      build: (v) => ({ method: 'POST', url: '/cyborg/v1/drivers/fake/install', body: { host: v } }),
    },
    {
      route: 'GET /cyborg/v1/services',
      field: 'querystring/driver',
      max: 255,
      at: 'url',
      build: (v) => ({ method: 'GET', url: `/cyborg/v1/services?driver=${enc(v)}` }),
    },
    {
      route: 'POST /cyborg/v1/services/discover',
      field: 'body/host',
      max: 255,
      at: 'body',
      wrongType: 1,
      build: (v) => ({ method: 'POST', url: '/cyborg/v1/services/discover', body: { host: v } }),
    },
    {
      route: 'POST /cyborg/v1/instances/{uuid}/attach',
      field: 'body/deviceProfileName',
      max: 255,
      at: 'body',
      wrongType: 1,
      build: (v) => ({ method: 'POST', url: `/cyborg/v1/instances/${U}/attach`, body: { deviceProfileName: v } }),
    },
    {
      route: 'POST /cyborg/v1/instances/{uuid}/attach',
      field: 'body/host',
      max: 255,
      at: 'body',
      wrongType: 1,
      build: (v) => ({ method: 'POST', url: `/cyborg/v1/instances/${U}/attach`, body: { host: v } }),
    },
  ];

  /** The message of either error format: Cyborg's faultstring, or this project's `message`. */
  const messageOf = (res: { json: <T>() => T }, url: string): string =>
    url.startsWith('/cyborg/v1') ? res.json<{ message: string }>().message : fault(res as never);

  it('each is a 400 whose message names the field', async () => {
    const failures: string[] = [];
    for (const input of inputs()) {
      const variants: [string, unknown][] = input.variants
        ? [...input.variants]
        : input.max === 0
          ? [
              ['not a number', 'abc'],
              ['out of range', '100000000'],
            ]
          : [
              ['too long', 'x'.repeat(input.max + 1)],
              ['NUL', 'a\u0000b'],
            ];
      if (input.at === 'header') variants.splice(1); // HTTP headers cannot carry NUL
      if (input.at === 'body' && !input.variants) variants.push(['lone surrogate', 'a\uDC00b']);
      if (input.wrongType !== undefined) variants.push(['wrong type', input.wrongType]);
      for (const [what, value] of variants) {
        const r = input.build(value);
        const res = await c.call(r.method, r.url, { headers: { ...persona.admin, ...r.headers }, body: r.body });
        const label = `${input.route} ${input.field} (${what})`;
        if (res.statusCode !== 400) {
          failures.push(`${label} → ${res.statusCode} ${res.body.slice(0, 200)}`);
          continue;
        }
        const message = messageOf(res, r.url);
        const named = input.field.replace('{arq}', arq).replace(/ key$/, '');
        if (!message.includes(named)) failures.push(`${label} → 400 without naming the field: ${message.slice(0, 200)}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('nothing bounded away ever reached the database: the profile made in beforeAll is still the only one', async () => {
    const names = (await c.call('GET', '/v2/device_profiles', { headers: persona.admin }))
      .json<{ device_profiles: { name: string }[] }>()
      .device_profiles.map((p) => p.name);
    expect(names).toEqual(['dp']);
  });

  it('a request id that does not fit the transition log is replaced, not stored', async () => {
    const res = await c.call('GET', '/v2/devices', { headers: { ...persona.admin, 'x-openstack-request-id': 'r'.repeat(300) } });
    expect(res.statusCode).toBe(200);
  });
});
