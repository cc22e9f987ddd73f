import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { InjectOptions } from 'fastify';
import { persona } from '../api-v2/harness.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { deepJson, hostileObject, hostileString, hostileValue, MB, Rng, seedFromEnv, urlEncode } from './generate.js';

type Operation = { method: string; path: string; query: string[]; body: string[] };
type OpenApi = {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { in: string; name: string }[];
        requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown>; items?: { properties?: Record<string, unknown> } } }> };
      }
    >
  >;
};

const REQUESTS = 1_000;
const SEED = seedFromEnv(19_0719);
// Streams answer for as long as the client listens: no request of a fuzzer.
const STREAMING = /\/events$/;

/** Every operation of the app, from its own OpenAPI document (routes hidden from it included by hand). */
function operationsOf(doc: OpenApi): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    if (STREAMING.test(path)) continue;
    for (const [method, op] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const json = op.requestBody?.content?.['application/json']?.schema;
      ops.push({
        method: method.toUpperCase(),
        path,
        query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        body: Object.keys(json?.properties ?? json?.items?.properties ?? {}),
      });
    }
  }
  return ops;
}

/** One hostile request on `op`: its path parameters, query and body from the generator. */
function requestFor(r: Rng, op: Operation): InjectOptions {
  const path = op.path.replace(/\{[^}]+\}/g, () => urlEncode(r.chance(0.2) ? `ok-${r.int(10)}` : hostileString(r).slice(0, r.pick([100, 20_000]))));
  const query = op.query.filter(() => r.chance(0.6)).map((q) => `${q}=${urlEncode(String(hostileValue(r)).slice(0, 50_000))}`);
  const headers: Record<string, string> = { ...r.pick([persona.admin, persona.service, persona.member, persona.reader, {}]) };
  const opts: InjectOptions = { method: op.method as InjectOptions['method'], url: query.length ? `${path}?${query.join('&')}` : path, headers };
  if (op.method === 'GET' || op.method === 'DELETE') return opts;
  switch (r.int(8)) {
    case 0:
      opts.payload = deepJson(10_000, r.chance(0.5));
      headers['content-type'] = 'application/json';
      break;
    case 1:
      opts.payload = `{"a": "${'z'.repeat(MB)}"}`;
      headers['content-type'] = 'application/json';
      break;
    case 2:
      opts.payload = '{"truncated": ';
      headers['content-type'] = 'application/json';
      break;
    case 3:
      opts.payload = Buffer.from([0xff, 0xfe, 0x00, 0x7b, 0x22]);
      headers['content-type'] = r.pick(['application/json', 'application/octet-stream', 'text/plain', 'multipart/form-data; boundary=x']);
      break;
    case 4:
      opts.payload = JSON.stringify(r.chance(0.5) ? [hostileObject(r, op.body)] : hostileValue(r));
      headers['content-type'] = r.pick(['application/json', 'application/json; charset=latin1', 'text/plain']);
      break;
    default:
      opts.payload = JSON.stringify(hostileObject(r, op.body));
      headers['content-type'] = 'application/json';
  }
  if (r.chance(0.05)) headers['x-user-id'] = hostileString(r).slice(0, 2_000);
  if (r.chance(0.05)) headers['openstack-api-version'] = `accelerator ${hostileString(r).slice(0, 300)}`;
  return opts;
}

/**
 * A write that is right but for one value: what reaches the conductor and the journal when the
 * edge lets it through (a profile name, an ARQ's profile, a binding's hostname, an accelerator's action).
 */
function nearlyValid(r: Rng, accelerators: string[]): InjectOptions {
  const headers = { ...persona.admin, 'content-type': 'application/json' };
  const v = (): unknown => (r.chance(0.3) ? `ok-${r.int(1_000)}` : r.chance(0.7) ? hostileString(r).slice(0, 300) : hostileValue(r));
  switch (r.int(4)) {
    case 0:
      return {
        method: 'POST',
        url: '/v2/device_profiles',
        headers,
        payload: JSON.stringify([{ name: v(), description: v(), groups: [{ 'resources:FPGA': '1' }] }]),
      };
    case 1:
      return {
        method: 'POST',
        url: '/v2/accelerator_requests',
        headers,
        payload: JSON.stringify({ device_profile_name: v(), device_profile_group_id: r.chance(0.5) ? 0 : v() }),
      };
    case 2:
      return {
        method: 'PATCH',
        url: '/v2/accelerator_requests',
        headers,
        payload: JSON.stringify({
          [String(v())]: [
            { op: 'add', path: '/hostname', value: v() },
            { op: 'add', path: '/device_rp_uuid', value: v() },
            { op: 'add', path: '/instance_uuid', value: v() },
          ],
        }),
      };
    default: {
      const action = r.pick(['program', 'attach', 'enable', 'detach']);
      const body = action === 'program' ? { bitstreamId: v() } : action === 'enable' ? {} : { instanceUuid: v() };
      return { method: 'POST', url: `/cyborg/v1/accelerators/${r.pick(accelerators)}/${action}`, headers, payload: JSON.stringify(body) };
    }
  }
}

/**
 * A fuzzer against the all-in-one on a real PostgreSQL journal: a thousand generated requests on
 * every route of the v2 and operator API, each with hostile input. None may crash the process,
 * wedge the journal or answer a 5xx: the database is up, so every refusal is the client's 4xx.
 */
describe.skipIf(!svc.postgres)('fuzzed HTTP requests on every route', { timeout: 300_000 }, () => {
  let s: Stack;
  let db: Awaited<ReturnType<typeof freshDatabase>>;

  beforeAll(async () => {
    db = await freshDatabase('fuzz_http');
    s = await startStack({ hosts: ['fuzz-1'], journal: { databaseUrl: db.url }, api: true, log: quietLogger(), agent: { telemetryIntervalMs: 0 } });
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    await db?.drop();
  });

  it(`answers each with a 4xx or a success, and serves and writes afterwards (seed ${SEED})`, async () => {
    const doc = (await s.app.inject({ method: 'GET', url: '/openapi.json' })).json<OpenApi>();
    const ops = operationsOf(doc);
    const paths = new Set(ops.map((o) => o.path));
    expect(
      [...paths].some((p) => p.startsWith('/v2/')),
      'v2 routes in the document',
    ).toBe(true);
    expect(
      [...paths].some((p) => p.startsWith('/cyborg/v1/')),
      'operator routes in the document',
    ).toBe(true);

    const accelerators = (await s.app.inject({ method: 'GET', url: '/cyborg/v1/accelerators', headers: persona.admin }))
      .json<{ accelerators: { id: string }[] }>()
      .accelerators.map((a) => a.id);
    expect(accelerators.length).toBeGreaterThan(0);
    const r = new Rng(SEED);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (let i = 0; i < REQUESTS; i++) {
      // Every operation at least once, then at random.
      const op = i < ops.length ? ops[i]! : r.pick(ops);
      const req = i >= ops.length && r.chance(0.15) ? nearlyValid(r, accelerators) : requestFor(r, op);
      let status: number;
      try {
        status = (await s.app.inject(req)).statusCode;
      } catch (err) {
        // light-my-request refuses some headers a socket would refuse too: not the server's answer.
        if (/header|Invalid character/i.test((err as Error).message)) continue;
        throw err;
      }
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status >= 500) failures.push(`#${i} ${req.method} ${String(req.url).slice(0, 120)} → ${status}`);
    }
    expect(failures, `seed ${SEED} (replay with FUZZ_SEED=${SEED})`).toEqual([]);
    // Some got through to the conductor and the journal: the fuzzer is not only knocking at the edge.
    expect([...statuses].filter(([st]) => st >= 200 && st < 300).reduce((n, [, k]) => n + k, 0)).toBeGreaterThan(50);

    // Alive and not wedged: health answers, reads and writes work, the database takes a write.
    expect((await s.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const profile = `after-fuzz-${SEED}`;
    const created = await s.app.inject({
      method: 'POST',
      url: '/v2/device_profiles',
      headers: persona.admin,
      payload: [{ name: profile, groups: [{ 'resources:FPGA': '1' }] }],
    });
    expect(created.statusCode, created.body).toBeLessThan(300);
    const arq = await s.app.inject({ method: 'POST', url: '/v2/accelerator_requests', headers: persona.admin, payload: { device_profile_name: profile } });
    expect(arq.statusCode, arq.body).toBe(201);
    const uuid = arq.json<{ arqs: { uuid: string }[] }>().arqs[0]!.uuid;
    expect((await s.app.inject({ method: 'GET', url: `/v2/accelerator_requests/${uuid}`, headers: persona.admin })).statusCode).toBe(200);
    expect((await s.app.inject({ method: 'GET', url: '/cyborg/v1/accelerators', headers: persona.admin })).statusCode).toBe(200);
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const rows = await c.query('select count(*)::int as n from extended_accelerator_requests where uuid = $1', [uuid]);
      expect(rows.rows[0].n).toBe(1);
    } finally {
      await c.end();
    }
  });
});
