import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { silentLogger } from '../../config/logger.js';
import { type Stack, startStack } from '../support/stack.js';

const PAGE_MAX = 4;

/**
 * Every list of the operator API comes in pages (Cyborg's convention: `limit`, and `marker` = the
 * id of the last item of the previous page; `next` says where the following page is), never more
 * than `api.pageMax` items at once; Cyborg's deployables list takes the same `limit` and `marker`.
 */
describe('lists in pages', () => {
  let rt: Stack;
  let app: FastifyInstance;

  beforeAll(async () => {
    rt = await startStack({ hosts: ['page-1', 'page-2', 'page-3'], fake: { gpus: 3, nics: 0 } });
    app = await buildApi({ control: rt.conductor, log: silentLogger(), limits: { pageMax: PAGE_MAX } });
  });
  afterAll(async () => {
    await app?.close();
    await rt?.stop();
  });

  const get = async <T>(url: string): Promise<{ status: number; body: T }> => {
    const res = await app.inject({ method: 'GET', url });
    return { status: res.statusCode, body: res.json<T>() };
  };

  /** Follows `next` from the first page; returns every page's ids. */
  async function walk(first: string, key: string, id: (x: Record<string, unknown>) => string): Promise<string[][]> {
    const pages: string[][] = [];
    let url: string | undefined = first;
    while (url) {
      const { status, body } = await get<Record<string, unknown>>(url);
      expect(status).toBe(200);
      pages.push((body[key] as Record<string, unknown>[]).map(id));
      url = body.next as string | undefined;
      expect(pages.length).toBeLessThan(100);
    }
    return pages;
  }

  it('walks the accelerators page by page: each one once, in the order of the whole list', async () => {
    const all = rt.conductor.listAccelerators().map((a) => a.id);
    expect(all.length).toBeGreaterThan(PAGE_MAX);
    const pages = await walk('/cyborg/v1/accelerators?limit=2', 'accelerators', (a) => a.id as string);
    expect(pages).toHaveLength(Math.ceil(all.length / 2));
    expect(pages.slice(0, -1).every((p) => p.length === 2)).toBe(true);
    expect(pages.flat()).toEqual(all);
  });

  it('keeps filters across pages, and answers at most api.pageMax without a limit or with a larger one', async () => {
    const pages = await walk('/cyborg/v1/accelerators?host=page-2&limit=2', 'accelerators', (a) => a.host as string);
    expect(pages.flat()).toEqual(rt.conductor.listAccelerators({ host: 'page-2' }).map(() => 'page-2'));
    expect(pages.length).toBeGreaterThan(1);
    for (const url of ['/cyborg/v1/accelerators', `/cyborg/v1/accelerators?limit=${PAGE_MAX * 100}`]) {
      const { body } = await get<{ accelerators: unknown[]; next?: string }>(url);
      expect(body.accelerators).toHaveLength(PAGE_MAX);
      expect(body.next).toContain('marker=');
    }
  });

  it('pages hosts by name', async () => {
    const pages = await walk('/cyborg/v1/hosts?limit=1', 'hosts', (h) => h.name as string);
    expect(pages).toEqual([['page-1'], ['page-2'], ['page-3']]);
  });

  it('refuses a marker that names nothing in the list with a 400 naming marker', async () => {
    const res = await app.inject({ method: 'GET', url: '/cyborg/v1/accelerators?marker=00000000-0000-4000-8000-000000000000' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'request.invalid', field: 'marker' });
    expect((await app.inject({ method: 'GET', url: '/cyborg/v1/hosts?limit=0' })).statusCode).toBe(400);
  });

  it("pages Cyborg's deployables with its limit and marker", async () => {
    const headers = { 'x-roles': 'admin', 'x-project-id': 'p', 'x-user-id': 'u' };
    const whole = (await app.inject({ method: 'GET', url: '/v2/deployables', headers })).json<{ deployables: { uuid: string }[] }>().deployables;
    expect(whole).toHaveLength(PAGE_MAX);
    const first = (await app.inject({ method: 'GET', url: '/v2/deployables?limit=2', headers })).json<{ deployables: { uuid: string }[] }>().deployables;
    const second = (await app.inject({ method: 'GET', url: `/v2/deployables?limit=2&marker=${first[1]!.uuid}`, headers })).json<{
      deployables: { uuid: string }[];
    }>().deployables;
    expect([...first, ...second].map((d) => d.uuid)).toEqual(whole.map((d) => d.uuid));
    const bad = await app.inject({ method: 'GET', url: '/v2/deployables?marker=00000000-0000-4000-8000-000000000000', headers });
    expect(bad.statusCode).toBe(400);
  });

  it("answers Nova's whole ARQ list without a limit (streamed), and pages it, profiles and attributes with limit and marker", async () => {
    const headers = { 'x-roles': 'admin', 'x-project-id': 'p', 'x-user-id': 'u', 'content-type': 'application/json' };
    for (const name of ['page-a', 'page-b', 'page-c']) {
      const res = await app.inject({
        method: 'POST',
        url: '/v2/device_profiles',
        headers,
        payload: JSON.stringify([{ name, groups: [{ 'resources:FPGA': '5' }] }]),
      });
      expect(res.statusCode).toBe(201);
      expect(
        (await app.inject({ method: 'POST', url: '/v2/accelerator_requests', headers, payload: JSON.stringify({ device_profile_name: name }) })).statusCode,
      ).toBe(201);
    }
    const v2 = { 'x-roles': 'admin', 'x-project-id': 'p', 'x-user-id': 'u' };
    const list = async <T>(url: string): Promise<{ status: number; body: T }> => {
      const res = await app.inject({ method: 'GET', url, headers: v2 });
      return { status: res.statusCode, body: res.json<T>() };
    };
    const walkV2 = async (first: string, key: string): Promise<string[][]> => {
      const pages: string[][] = [];
      let url: string | undefined = first;
      while (url) {
        const { status, body } = await list<Record<string, unknown>>(url);
        expect(status).toBe(200);
        pages.push((body[key] as { uuid: string }[]).map((x) => x.uuid));
        url = body.next as string | undefined;
        expect(pages.length).toBeLessThan(100);
      }
      return pages;
    };
    // All 15, more than api.pageMax: Nova and tempest read the list without a limit and expect every ARQ.
    const whole = await list<{ arqs: { uuid: string; state: string }[]; next?: string }>('/v2/accelerator_requests');
    expect(whole.status).toBe(200);
    expect(whole.body.arqs).toHaveLength(15);
    expect(whole.body.next).toBeUndefined();
    expect(whole.body.arqs.every((a) => a.state === 'Initial')).toBe(true);
    const arqPages = await walkV2('/v2/accelerator_requests?limit=4', 'arqs');
    expect(arqPages.map((p) => p.length)).toEqual([4, 4, 4, 3]);
    expect(arqPages.flat()).toEqual(whole.body.arqs.map((a) => a.uuid));
    // A limit above api.pageMax is lowered to it.
    expect((await list<{ arqs: unknown[] }>('/v2/accelerator_requests?limit=1000')).body.arqs).toHaveLength(PAGE_MAX);
    const profiles = (await list<{ device_profiles: { uuid: string }[] }>('/v2/device_profiles')).body.device_profiles;
    expect(profiles).toHaveLength(3);
    expect((await walkV2('/v2/device_profiles?limit=1', 'device_profiles')).flat()).toEqual(profiles.map((p) => p.uuid));
    const attributes = (await list<{ attributes: { uuid: string }[] }>('/v2/attributes')).body.attributes;
    expect(attributes.length).toBeGreaterThan(2);
    expect((await walkV2('/v2/attributes?limit=2', 'attributes')).flat()).toEqual(attributes.map((a) => a.uuid));
    for (const url of ['/v2/accelerator_requests', '/v2/device_profiles', '/v2/attributes']) {
      expect((await list(`${url}?marker=00000000-0000-4000-8000-000000000000`)).status).toBe(400);
    }
  });
});
