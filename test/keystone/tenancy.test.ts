import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { EXPECTATIONS, PERSONAS, expectedStatus, type Persona } from './tenancy-table.js';
import { KEYSTONE_URL, revoke, serviceAuth, shortLivedToken, tokenOf } from './peer.js';

const PROFILE = 'tenancy-dp';
const FAKE_PROFILE = { 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' };
const HOST = 'tenancy-host';

/** What a project owns, as the stories below set it up: one bound ARQ on the shared FPGA. */
interface Tenant {
  projectId: string;
  userIds: string[];
  instance: string;
  arq: string;
}

/**
 * Tenants of a real Keystone cloud: project A (`demo`: member, reader, manager) and project B
 * (`other`: a member) each boot an instance with an FPGA slot of the same card, as Nova does
 * (the user's token with Nova's service token). Then every route of the OpenAPI document is
 * called as every persona — the admin, A's member, reader and manager, B's member, Nova with and
 * without its service token, A's reader holding Nova's service token, nobody, a revoked token —
 * and each answer's status must be the table's (tenancy-table.ts; a route the table does not
 * name fails). Nothing B reads — any body, any page, the event stream — may carry A's ids.
 */
describe.skipIf(!svc.keystone)('tenancy: every route × every persona against a real Keystone', () => {
  let stack: Stack;
  let app: FastifyInstance;
  let base: string;
  const headers = {} as Record<Persona, Record<string, string>>;
  let A: Tenant;
  let B: Tenant;
  let fpga: { id: string; rpUuid: string };
  /** Everything project B was answered, with what it asked (an id B sent itself may come back in a 404). */
  const seenByB: { url: string; text: string }[] = [];

  /** Every id of project A that B must never read, and its users' names (the audit keeps them beside the ids). */
  const aIds = (): string[] => [A.projectId, ...A.userIds, A.instance, A.arq, '"demo-member"', '"demo-reader"', '"demo-manager"'];

  async function call(method: string, url: string, h: Record<string, string>, body?: unknown): Promise<{ status: number; text: string }> {
    if (url.startsWith('/cyborg/v1/events')) return stream(url, h);
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: { ...h, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    return { status: res.statusCode, text: res.body };
  }

  /** The event stream's status and what it sends first (it never ends by itself). */
  async function stream(url: string, h: Record<string, string>): Promise<{ status: number; text: string }> {
    const ac = new AbortController();
    const res = await request(`${base}${url}`, { headers: h, signal: ac.signal });
    if (res.statusCode !== 200) return { status: res.statusCode, text: await res.body.text() };
    ac.abort();
    await res.body.text().catch(() => undefined);
    return { status: res.statusCode, text: '' };
  }

  async function boot(who: Persona, tenant: { projectId: string; userIds: string[] }): Promise<Tenant> {
    const made = await call('POST', '/v2/accelerator_requests', headers[who], { device_profile_name: PROFILE });
    expect(made.status, made.text).toBe(201);
    const arq = (JSON.parse(made.text) as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
    const instance = randomUUID();
    const ops = [
      { op: 'add', path: '/hostname', value: HOST },
      { op: 'add', path: '/device_rp_uuid', value: fpga.rpUuid },
      { op: 'add', path: '/instance_uuid', value: instance },
    ];
    const bind = await call('PATCH', '/v2/accelerator_requests', { ...headers[who], 'x-service-token': headers.service['x-auth-token']! }, { [arq]: ops });
    expect(bind.status, bind.text).toBe(202);
    await eventually(() => stack.conductor.getArq(arq).state === 'Bound', { what: `ARQ ${arq} of ${who} bound` });
    return { ...tenant, instance, arq };
  }

  beforeAll(async () => {
    stack = await startStack({ hosts: [HOST], log: quietLogger() });
    // Patient with Keystone (its cache is off, and a busy machine makes it slow): a 503 here is no tenancy answer.
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth(), timeoutMs: 30_000 });
    const validator = new TokenValidator({ session, cache: { ttlMs: 300_000 }, timeoutMs: 30_000 });
    app = await buildApi({
      control: stack.conductor,
      log: quietLogger(),
      v2: { authStrategy: 'keystone' },
      auth: { keystone: { validator, wwwAuthenticateUri: 'http://127.0.0.1:15001' } },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

    const [admin, memberA, readerA, managerA, memberB, nova, revoked] = await Promise.all(
      (['admin', 'demoMember', 'demoReader', 'demoManager', 'otherMember', 'nova', 'demoMember'] as const).map((u) => tokenOf(u)),
    );
    // Revoked before this api ever saw it: Keystone, not a cache, says it is no longer valid.
    await revoke(revoked!.token);
    // Expired after this api saw it valid: a token from an application credential that ends in a
    // few seconds (Keystone caps the token's life at the credential's), used once while valid so
    // that the api's validation cache holds it — and must not outlive its expiry.
    const expiring = await shortLivedToken('demoMember', 6_000);
    const early = await app.inject({ method: 'GET', url: '/v2/device_profiles', headers: { 'x-auth-token': expiring.token } });
    expect(early.statusCode, early.body).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, expiring.expiresAt - Date.now()) + 1_500));
    const t = (x: { token: string }) => ({ 'x-auth-token': x.token });
    Object.assign(headers, {
      admin: t(admin!),
      memberA: t(memberA!),
      readerA: t(readerA!),
      managerA: t(managerA!),
      memberB: t(memberB!),
      service: t(nova!),
      serviceWithToken: { ...t(nova!), 'x-service-token': nova!.token },
      readerWithServiceToken: { ...t(readerA!), 'x-service-token': nova!.token },
      anonymous: {},
      revoked: t(revoked!),
      expired: t(expiring),
    } satisfies Record<Persona, Record<string, string>>);

    const view = stack.conductor.listAccelerators({ type: 'FPGA' })[0]!;
    await stack.conductor.act(view.id, { type: 'ENABLE' });
    fpga = { id: view.id, rpUuid: view.rpUuid };
    expect((await call('POST', '/v2/device_profiles', headers.admin, [{ name: PROFILE, groups: [FAKE_PROFILE] }])).status).toBe(201);
    A = await boot('memberA', { projectId: memberA!.projectId, userIds: [memberA!.userId, readerA!.userId, managerA!.userId] });
    B = await boot('memberB', { projectId: memberB!.projectId, userIds: [memberB!.userId] });
    // Both hold a slot of the same card: the one place where A's and B's data meet.
    expect(
      stack.conductor
        .getAccelerator(fpga.id)
        .allocations.map((a) => a.projectId)
        .sort(),
    ).toEqual([A.projectId, B.projectId].sort());
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await stack?.stop();
  });

  /** Concrete values for the path parameters: real objects of project A where reading them is the point. */
  function urlOf(path: string, method: string): string {
    const write = method !== 'GET';
    const values: Record<string, string> = {
      id: write ? randomUUID() : path.startsWith('/v2/device_profiles') ? profileUuid : fpga.id,
      uuid: write
        ? randomUUID()
        : path.startsWith('/v2/accelerator_requests')
          ? A.arq
          : path.startsWith('/v2/devices')
            ? deviceUuid
            : path.startsWith('/v2/deployables')
              ? deployableUuid
              : attributeUuid,
      name: HOST,
      host: write ? 'no-such-host' : HOST,
      ref: write ? 'no-such-driver' : driverId,
      instanceUuid: randomUUID(),
      '*': 'index.html',
    };
    if (path === '/cyborg/v1/history/{id}') return `/cyborg/v1/history/${A.arq}`;
    const url = path.replace(/\{([^}]+)\}/g, (_m, k: string) => values[k] ?? `no-value-for-${k}`);
    return url + (QUERY[`${method} ${path}`] ?? '');
  }

  const QUERY: Record<string, string> = {
    'DELETE /v2/accelerator_requests': `?instance=${randomUUID()}`,
    'DELETE /v2/device_profiles': '?value=no-such-profile',
  };

  /** Bodies that pass the schema and touch nothing that exists (writes aim at absent targets). */
  function bodyOf(path: string, method: string): unknown {
    if (method === 'GET' || method === 'DELETE') return undefined;
    if (path === '/v2/accelerator_requests' && method === 'POST') return { device_profile_name: PROFILE };
    if (path.startsWith('/v2/accelerator_requests') && method === 'PATCH') {
      const ops = [
        { op: 'add', path: '/hostname', value: HOST },
        { op: 'add', path: '/device_rp_uuid', value: fpga.rpUuid },
        { op: 'add', path: '/instance_uuid', value: randomUUID() },
      ];
      return path.endsWith('{uuid}') ? ops : { [randomUUID()]: ops };
    }
    if (path === '/v2/device_profiles') return [{ name: `tenancy-${randomUUID().slice(0, 8)}`, groups: [FAKE_PROFILE] }];
    if (path === '/v2/attributes') return { deployable_id: 999_999, key: 'k', value: 'v' };
    if (path === '/v2/deployables/{uuid}/program') return [{ op: 'replace', path: '/program', value: [{ image_uuid: randomUUID() }] }];
    if (path === '/cyborg/v1/instances/{instanceUuid}/attach') return { acceleratorId: randomUUID() };
    if (path === '/cyborg/v1/accelerators/{id}/attach') return { instanceUuid: randomUUID() };
    // A programming names its image: the body must pass for the table's status (404 for an unknown id) to show.
    if (path === '/cyborg/v1/accelerators/{id}/program') return { bitstreamId: 'tenancy-bitstream' };
    return {};
  }

  let profileUuid = '';
  let deviceUuid = '';
  let deployableUuid = '';
  let attributeUuid = '';
  let driverId = '';

  it('answers every route of the OpenAPI document as the table says, for every persona', async () => {
    const first = async <T>(url: string, key: string): Promise<T> =>
      (JSON.parse((await call('GET', url, headers.admin)).text) as Record<string, T[]>)[key]![0]!;
    profileUuid = (await first<{ uuid: string }>('/v2/device_profiles', 'device_profiles')).uuid;
    deviceUuid = (await first<{ uuid: string }>('/v2/devices', 'devices')).uuid;
    deployableUuid = (await first<{ uuid: string }>('/v2/deployables', 'deployables')).uuid;
    attributeUuid = (await first<{ uuid: string }>('/v2/attributes', 'attributes')).uuid;
    driverId = (await first<{ id: string }>('/cyborg/v1/drivers', 'drivers')).id;

    const doc = JSON.parse((await call('GET', '/openapi.json', {})).text) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    // A route without an expectation is a failure: a new route is covered by construction.
    expect(
      operations.filter((op) => !(op in EXPECTATIONS)),
      'routes with no expectation in tenancy-table.ts',
    ).toEqual([]);
    // And the table holds no route the API no longer serves (a rename would leave the new one
    // unchecked) — but the page's static files, served only where ui/dist has been built.
    const served = (op: string): boolean => operations.includes(op) || op === 'GET /ui/{*}';
    expect(
      Object.keys(EXPECTATIONS).filter((op) => !served(op)),
      'expectations for routes the API does not serve',
    ).toEqual([]);

    const got: Record<string, Record<string, number>> = {};
    const want: Record<string, Record<string, number>> = {};
    for (const op of operations) {
      const [method, path] = op.split(' ') as [string, string];
      got[op] = {};
      want[op] = {};
      for (const who of PERSONAS) {
        const url = urlOf(path, method);
        const res = await call(method, url, headers[who], bodyOf(path, method));
        got[op][who] = res.status;
        want[op][who] = expectedStatus(EXPECTATIONS[op]!, who, res.status);
        if (who === 'memberB') seenByB.push({ url, text: res.text });
        if (res.status === 401 || res.status === 403 || res.status === 503) {
          // Refusals name the rule or the condition: no internal URL, stack or credential.
          expect(res.text, `${op} as ${who}`).not.toMatch(/127\.0\.0\.1:15001|\/v3\/auth|\bat [\w.<>]+ \(|secret/);
        }
      }
    }
    expect(got).toEqual(want);
  }, 240_000);

  it("project B reads none of project A's ids in any body, on any page of the audit, or on the event stream", async () => {
    // Every page of B's audit, one row a page.
    let url: string | undefined = '/cyborg/v1/audit?limit=1';
    let pages = 0;
    while (url && pages < 100) {
      const res = await call('GET', url, headers.memberB);
      expect(res.status).toBe(200);
      seenByB.push({ url, text: res.text });
      url = (JSON.parse(res.text) as { next?: string }).next;
      pages++;
    }
    expect(pages).toBeGreaterThan(1); // B's own boot left rows of its own
    // B's event stream while A boots and stops another instance on the shared card, then B does something.
    const ac = new AbortController();
    const res = await request(`${base}/cyborg/v1/events`, { headers: headers.memberB, signal: ac.signal });
    expect(res.statusCode).toBe(200);
    let text = '';
    const reading = (async () => {
      for await (const chunk of res.body) text += String(chunk);
    })().catch(() => undefined);
    const second = await boot('memberA', A);
    await call('DELETE', `/v2/accelerator_requests?arqs=${second.arq}`, { ...headers.memberA, 'x-service-token': headers.service['x-auth-token']! });
    const mine = await call('POST', '/v2/accelerator_requests', headers.memberB, { device_profile_name: PROFILE });
    const sentinel = (JSON.parse(mine.text) as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
    await eventually(() => text.includes(sentinel), { what: "B's own ARQ on its event stream" });
    ac.abort();
    await reading;
    seenByB.push({ url: '/cyborg/v1/events', text });
    // The shared card's events reached B (it holds a slot), without A's ids.
    expect(text).toContain(fpga.id);

    const leaks = seenByB.flatMap(({ url: asked, text: body }) =>
      [...aIds(), second.arq, second.instance].filter((id) => body.includes(id) && !asked.includes(id)).map((id) => `${id} in ${asked}: ${body.slice(0, 300)}`),
    );
    expect(leaks).toEqual([]);
  }, 60_000);

  it("with the new defaults too, a reader holding Nova's service token neither creates nor binds ARQs (Cyborg 2026.2)", async () => {
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth(), timeoutMs: 30_000 });
    const validator = new TokenValidator({ session, cache: { ttlMs: 300_000 }, timeoutMs: 30_000 });
    const strict = await buildApi({
      control: stack.conductor,
      log: quietLogger(),
      v2: { authStrategy: 'keystone', enforceNewDefaults: true },
      auth: { keystone: { validator, wwwAuthenticateUri: 'http://127.0.0.1:15001' } },
    });
    try {
      const ops = (arq: string) => ({
        [arq]: [
          { op: 'add', path: '/hostname', value: HOST },
          { op: 'add', path: '/device_rp_uuid', value: fpga.rpUuid },
          { op: 'add', path: '/instance_uuid', value: randomUUID() },
        ],
      });
      const as = async (who: Persona, method: 'POST' | 'PATCH', url: string, body: unknown): Promise<number> =>
        (await strict.inject({ method, url, headers: { ...headers[who], 'content-type': 'application/json' }, payload: JSON.stringify(body) })).statusCode;
      expect(await as('readerWithServiceToken', 'POST', '/v2/accelerator_requests', { device_profile_name: PROFILE })).toBe(403);
      expect(await as('readerWithServiceToken', 'PATCH', '/v2/accelerator_requests', ops(randomUUID()))).toBe(403);
      // The member with Nova's service token is who binds: through, to an ARQ that does not exist.
      expect(await as('memberA', 'PATCH', '/v2/accelerator_requests', ops(randomUUID()))).toBe(403);
      expect(
        await strict
          .inject({
            method: 'PATCH',
            url: '/v2/accelerator_requests',
            headers: { ...headers.memberA, 'x-service-token': headers.service['x-auth-token']!, 'content-type': 'application/json' },
            payload: JSON.stringify(ops(randomUUID())),
          })
          .then((r) => r.statusCode),
      ).toBe(404);
    } finally {
      await strict.close();
    }
  });

  it("B cannot read, bind or delete A's ARQ: it does not exist for B, and it is still there", async () => {
    const withNova = { ...headers.memberB, 'x-service-token': headers.service['x-auth-token']! };
    expect((await call('GET', `/v2/accelerator_requests/${A.arq}`, headers.memberB)).status).toBe(404);
    expect((await call('DELETE', `/v2/accelerator_requests?arqs=${A.arq}`, withNova)).status).toBe(404);
    expect((await call('DELETE', `/v2/accelerator_requests/${A.arq}`, withNova)).status).toBe(404);
    expect((await call('GET', `/cyborg/v1/accelerators/${fpga.id}/usage`, headers.memberB)).status).toBe(200);
    expect(JSON.parse((await call('GET', `/cyborg/v1/history/${A.arq}`, headers.memberB)).text)).toEqual({ transitions: [] });
    expect(stack.conductor.getArq(A.arq).state).toBe('Bound');
  });
});
