import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enableAll, FAKE_PROFILE, persona, startCyborg, type Cyborg, type Persona } from './harness.js';

const HOST = 'policy-host';
const PERSONAS = Object.keys(persona) as Persona[];
type H = Record<string, string>;

/** One route of the matrix: `run` makes a valid request as `who` (setting up what it needs as admin). */
interface Route {
  route: string;
  ok: number;
  /** Personas the 2026.2 defaults (with the legacy rules OR-ed, Cyborg's default) let through. */
  allowed: Persona[];
  /** Allowed by policy, but the ARQ belongs to another project: invisible (404). */
  hidden?: Persona[];
  run(c: Cyborg, who: H): Promise<number>;
}

const everyoneScoped: Persona[] = ['admin', 'manager', 'member', 'reader', 'service', 'noroles', 'otherMember'];
const managers: Persona[] = ['admin', 'manager'];
const admins: Persona[] = ['admin'];
const notOwners: Persona[] = ['service', 'otherMember'];

async function newProfile(c: Cyborg): Promise<string> {
  const res = await c.call('POST', '/v2/device_profiles', {
    headers: persona.admin,
    body: [{ name: `dp-${randomUUID().slice(0, 8)}`, groups: [FAKE_PROFILE] }],
  });
  return res.json<{ uuid: string }>().uuid;
}

async function newArq(c: Cyborg): Promise<string> {
  const res = await c.call('POST', '/v2/accelerator_requests', { headers: persona.admin, body: { device_profile_name: 'policy-dp' } });
  return res.json<{ arqs: { uuid: string }[] }>().arqs[0]!.uuid;
}

const bindOps = (c: Cyborg, instance: string) => [
  { op: 'add', path: '/hostname', value: HOST },
  { op: 'add', path: '/device_rp_uuid', value: c.rpOf(HOST) },
  { op: 'add', path: '/instance_uuid', value: instance },
];

let device = '';
let deployable = '';
let attribute = '';

const ROUTES: Route[] = [
  {
    route: 'GET /v2/device_profiles',
    ok: 200,
    allowed: everyoneScoped,
    run: async (c, h) => (await c.call('GET', '/v2/device_profiles', { headers: h })).statusCode,
  },
  {
    route: 'GET /v2/device_profiles/{uuid}',
    ok: 200,
    allowed: everyoneScoped,
    run: async (c, h) => (await c.call('GET', `/v2/device_profiles/${await newProfile(c)}`, { headers: h })).statusCode,
  },
  {
    route: 'POST /v2/device_profiles',
    ok: 201,
    allowed: admins,
    run: async (c, h) =>
      (await c.call('POST', '/v2/device_profiles', { headers: h, body: [{ name: `dp-${randomUUID().slice(0, 8)}`, groups: [FAKE_PROFILE] }] })).statusCode,
  },
  {
    route: 'DELETE /v2/device_profiles/{uuid}',
    ok: 204,
    allowed: admins,
    run: async (c, h) => (await c.call('DELETE', `/v2/device_profiles/${await newProfile(c)}`, { headers: h })).statusCode,
  },
  {
    route: 'GET /v2/accelerator_requests',
    ok: 200,
    allowed: everyoneScoped,
    run: async (c, h) => (await c.call('GET', '/v2/accelerator_requests', { headers: h })).statusCode,
  },
  {
    route: 'GET /v2/accelerator_requests/{uuid}',
    ok: 200,
    allowed: everyoneScoped,
    hidden: notOwners,
    run: async (c, h) => (await c.call('GET', `/v2/accelerator_requests/${await newArq(c)}`, { headers: h })).statusCode,
  },
  {
    route: 'POST /v2/accelerator_requests',
    ok: 201,
    allowed: ['admin', 'manager', 'member', 'service', 'otherMember'],
    run: async (c, h) => (await c.call('POST', '/v2/accelerator_requests', { headers: h, body: { device_profile_name: 'policy-dp' } })).statusCode,
  },
  {
    route: 'PATCH /v2/accelerator_requests (bind)',
    ok: 202,
    allowed: everyoneScoped,
    hidden: notOwners,
    run: async (c, h) => {
      const arq = await newArq(c);
      const instance = randomUUID();
      const status = (await c.call('PATCH', '/v2/accelerator_requests', { headers: h, body: { [arq]: bindOps(c, instance) } })).statusCode;
      await c.call('DELETE', `/v2/accelerator_requests?arqs=${arq}`, { headers: persona.admin });
      return status;
    },
  },
  {
    route: 'DELETE /v2/accelerator_requests?arqs=',
    ok: 204,
    allowed: everyoneScoped,
    hidden: notOwners,
    run: async (c, h) => (await c.call('DELETE', `/v2/accelerator_requests?arqs=${await newArq(c)}`, { headers: h })).statusCode,
  },
  {
    route: 'DELETE /v2/accelerator_requests?instance=',
    ok: 204,
    allowed: everyoneScoped,
    run: async (c, h) => (await c.call('DELETE', `/v2/accelerator_requests?instance=${randomUUID()}`, { headers: h })).statusCode,
  },
  { route: 'GET /v2/devices', ok: 200, allowed: managers, run: async (c, h) => (await c.call('GET', '/v2/devices', { headers: h })).statusCode },
  {
    route: 'GET /v2/devices/{uuid}',
    ok: 200,
    allowed: managers,
    run: async (c, h) => (await c.call('GET', `/v2/devices/${device}`, { headers: h })).statusCode,
  },
  {
    route: 'POST /v2/devices/{uuid}/disable',
    ok: 200,
    allowed: admins,
    run: async (c, h) => (await c.call('POST', `/v2/devices/${device}/disable`, { headers: h })).statusCode,
  },
  {
    route: 'POST /v2/devices/{uuid}/enable',
    ok: 200,
    allowed: admins,
    run: async (c, h) => (await c.call('POST', `/v2/devices/${device}/enable`, { headers: h })).statusCode,
  },
  { route: 'GET /v2/deployables', ok: 200, allowed: managers, run: async (c, h) => (await c.call('GET', '/v2/deployables', { headers: h })).statusCode },
  {
    route: 'GET /v2/deployables/{uuid}',
    ok: 200,
    allowed: managers,
    run: async (c, h) => (await c.call('GET', `/v2/deployables/${deployable}`, { headers: h })).statusCode,
  },
  {
    route: 'PATCH /v2/deployables/{uuid}/program',
    ok: 200,
    allowed: admins,
    run: async (c, h) =>
      (
        await c.call('PATCH', `/v2/deployables/${deployable}/program`, {
          headers: h,
          body: [{ op: 'replace', path: '/program', value: [{ image_uuid: randomUUID() }] }],
        })
      ).statusCode,
  },
  { route: 'GET /v2/attributes', ok: 200, allowed: managers, run: async (c, h) => (await c.call('GET', '/v2/attributes', { headers: h })).statusCode },
  {
    route: 'GET /v2/attributes/{uuid}',
    ok: 200,
    allowed: managers,
    run: async (c, h) => (await c.call('GET', `/v2/attributes/${attribute}`, { headers: h })).statusCode,
  },
  {
    route: 'POST /v2/attributes',
    ok: 201,
    allowed: admins,
    run: async (c, h) => (await c.call('POST', '/v2/attributes', { headers: h, body: { deployable_id: await depId(c), key: 'k', value: 'v' } })).statusCode,
  },
  {
    route: 'DELETE /v2/attributes/{uuid}',
    ok: 204,
    allowed: admins,
    run: async (c, h) => {
      const made = await c.call('POST', '/v2/attributes', { headers: persona.admin, body: { deployable_id: String(await depId(c)), key: 'tmp', value: 'v' } });
      return (await c.call('DELETE', `/v2/attributes/${made.json<{ uuid: string }>().uuid}`, { headers: h })).statusCode;
    },
  },
];

async function depId(c: Cyborg): Promise<number> {
  return (await c.call('GET', '/v2/attributes?key=rc', { headers: persona.admin })).json<{ attributes: { deployable_id: number }[] }>().attributes[0]!
    .deployable_id;
}

function expected(r: Route, who: Persona): number {
  if (!r.allowed.includes(who)) return 403;
  if (r.hidden?.includes(who)) return 404;
  return r.ok;
}

/** Cyborg 2026.2's policy defaults: each persona × each route → the status the reference gives. */
describe("policy matrix (noauth, enforce_new_defaults=false: Cyborg's defaults)", () => {
  let c: Cyborg;
  beforeAll(async () => {
    c = await startCyborg({ hosts: [HOST] });
    await enableAll(c);
    await c.call('POST', '/v2/device_profiles', { headers: persona.admin, body: [{ name: 'policy-dp', groups: [FAKE_PROFILE] }] });
    device = (await c.call('GET', '/v2/devices', { headers: persona.admin })).json<{ devices: { uuid: string }[] }>().devices[0]!.uuid;
    deployable = (await c.call('GET', '/v2/deployables', { headers: persona.admin })).json<{ deployables: { uuid: string }[] }>().deployables[0]!.uuid;
    attribute = (await c.call('GET', '/v2/attributes', { headers: persona.admin })).json<{ attributes: { uuid: string }[] }>().attributes[0]!.uuid;
  });
  afterAll(async () => c.stop());

  it.each(ROUTES.map((r) => [r.route, r] as const))('%s', async (_name, r) => {
    const got: Record<string, number> = {};
    const want: Record<string, number> = {};
    for (const who of PERSONAS) {
      got[who] = await r.run(c, persona[who]);
      want[who] = expected(r, who);
    }
    expect(got).toEqual(want);
  });

  it("a non-admin never sees another project's ARQs in a list (CVE-2026-40214)", async () => {
    const mine = await c.call('POST', '/v2/accelerator_requests', { headers: persona.otherMember, body: { device_profile_name: 'policy-dp' } });
    const uuid = mine.json<{ arqs: { uuid: string }[] }>().arqs[0]!.uuid;
    const seenByOther = (await c.call('GET', '/v2/accelerator_requests', { headers: persona.otherMember })).json<{
      arqs: { uuid: string; project_id: string }[];
    }>().arqs;
    expect(seenByOther.every((a) => a.project_id === 'other-project')).toBe(true);
    const seenByMember = (await c.call('GET', '/v2/accelerator_requests', { headers: persona.member })).json<{ arqs: { uuid: string }[] }>().arqs;
    expect(seenByMember.map((a) => a.uuid)).not.toContain(uuid);
    const seenByAdmin = (await c.call('GET', '/v2/accelerator_requests', { headers: persona.admin })).json<{ arqs: { uuid: string }[] }>().arqs;
    expect(seenByAdmin.map((a) => a.uuid)).toContain(uuid);
  });

  it("noauth: a bare X-Auth-Token reads like Placement's noauth2", async () => {
    expect((await c.call('GET', '/v2/devices', { headers: { 'x-auth-token': 'admin' } })).statusCode).toBe(200);
    expect((await c.call('GET', '/v2/devices', { headers: { 'x-auth-token': 'admin:demo-project' } })).statusCode).toBe(200);
    expect((await c.call('GET', '/v2/devices', { headers: { 'x-auth-token': 'alice:demo-project' } })).statusCode).toBe(403);
    const made = await c.call('POST', '/v2/accelerator_requests', {
      headers: { 'x-auth-token': 'alice:alice-project' },
      body: { device_profile_name: 'policy-dp' },
    });
    expect(made.statusCode).toBe(201);
    expect(made.json<{ arqs: { project_id: string }[] }>().arqs[0]!.project_id).toBe('alice-project');
  });
});

describe('policy with enforce_new_defaults=true: the deprecated rules no longer apply', () => {
  let c: Cyborg;
  beforeAll(async () => {
    c = await startCyborg({ hosts: ['strict-host'], v2: { enforceNewDefaults: true } });
    await c.call('POST', '/v2/device_profiles', { headers: persona.admin, body: [{ name: 'strict-dp', groups: [FAKE_PROFILE] }] });
  });
  afterAll(async () => c.stop());

  it.each([
    ['GET', '/v2/device_profiles', 'noroles', 403],
    ['GET', '/v2/device_profiles', 'reader', 200],
    ['GET', '/v2/accelerator_requests', 'noroles', 403],
    ['GET', '/v2/accelerator_requests', 'reader', 200],
    ['DELETE', `/v2/accelerator_requests?instance=${randomUUID()}`, 'reader', 403],
    ['DELETE', `/v2/accelerator_requests?instance=${randomUUID()}`, 'member', 204],
    ['GET', '/v2/devices', 'manager', 200],
    ['GET', '/v2/devices', 'member', 403],
  ] as const)('%s %s as %s → %i', async (method, url, who, status) => {
    expect((await c.call(method, url, { headers: persona[who] })).statusCode).toBe(status);
  });
});
