import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileTrust } from '../../api/v2/links.js';
import { enableAll, persona, startCyborg, type Cyborg } from './harness.js';

type VersionDoc = { id: string; status: string; min_version?: string; max_version?: string; links: { href: string; rel: string }[] };

/**
 * Version discovery as keystoneauth does it for `openstack --os-endpoint URL accelerator ...`
 * (no `openstack` CLI on this machine): from a versioned endpoint it first tries the URL with the
 * version segment stripped; it reads `versions` (a list, or `{values}`), `version`, or a bare
 * version document with an `id`; it picks the major version it wants and takes that version's
 * `self` link, joined against the discovery URL; requests then go to `<that URL>/<path>`.
 */
async function discover(endpoint: string, major = 2): Promise<string> {
  const trimmed = endpoint.replace(/\/+$/, '');
  const choices = /\/v\d+(\.\d+)?$/.test(trimmed) ? [trimmed.replace(/\/v\d+(\.\d+)?$/, ''), trimmed] : [trimmed];
  for (const url of choices) {
    const res = await fetch(`${url}/`.replace(/\/+$/, '/'), { headers: { accept: 'application/json' } });
    if (res.status !== 200 && res.status !== 300) continue;
    const body = (await res.json()) as { versions?: VersionDoc[] | { values: VersionDoc[] }; version?: VersionDoc } & Partial<VersionDoc>;
    const versions = body.versions
      ? Array.isArray(body.versions)
        ? body.versions
        : body.versions.values
      : body.version
        ? [body.version]
        : body.id
          ? [body as VersionDoc]
          : [];
    const wanted = versions.find((v) => Number(/^v?(\d+)/.exec(v.id)?.[1]) === major);
    const self = wanted?.links.find((l) => l.rel === 'self')?.href;
    if (self) return new URL(self, `${url}/`).href;
  }
  throw new Error(`no v${major} found from ${endpoint}`);
}

/** keystoneauth's join of a service URL and a request path. */
const at = (service: string, path: string) => `${service.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;

describe('version discovery resolves, at the root and under /accelerator', () => {
  let c: Cyborg;
  let root = '';
  beforeAll(async () => {
    c = await startCyborg({ hosts: ['discovery-host'], v2: { trustedProxies: ['10.0.0.0/8'] } });
    await enableAll(c);
    await c.app.listen({ host: '127.0.0.1', port: 0 });
    root = `http://127.0.0.1:${(c.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => c.stop());

  it.each([
    ['', '/v2/'],
    ['/', '/v2/'],
    ['/v2', '/v2/'],
    ['/v2/', '/v2/'],
    ['/accelerator', '/accelerator/v2/'],
    ['/accelerator/', '/accelerator/v2/'],
    ['/accelerator/v2', '/accelerator/v2/'],
  ])('`openstack --os-endpoint <root>%s accelerator device list` finds the API at %s and lists devices', async (endpoint, expected) => {
    const service = await discover(`${root}${endpoint}`);
    expect(new URL(service).pathname.replace(/\/?$/, '/')).toBe(expected);
    const res = await fetch(at(service, 'devices'), { headers: { ...persona.admin, 'openstack-api-version': 'accelerator 2.3' } });
    expect(res.status).toBe(200);
    const { devices } = (await res.json()) as { devices: { uuid: string; links: { href: string; rel: string }[] }[] };
    expect(devices.length).toBeGreaterThan(0);
    // The v2 document a client lands on names itself, and every resource link resolves.
    const doc = (await (await fetch(service)).json()) as VersionDoc;
    expect(doc.links[0]!.href).toBe(service.replace(/\/?$/, '/'));
    for (const link of devices[0]!.links) {
      expect(new URL(link.href).pathname.startsWith(expected.replace(/v2\/$/, ''))).toBe(true);
      expect((await fetch(link.href, { headers: persona.admin })).status, link.href).toBe(200);
    }
  });

  it("the /accelerator copy serves the unversioned resources, its errors in Cyborg's format, and not the operator API", async () => {
    expect((await c.call('GET', '/accelerator/devices', { headers: persona.admin })).statusCode).toBe(200);
    const missing = await c.call('GET', '/accelerator/v2/nothing-here', { headers: persona.admin });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toHaveProperty('error_message');
    expect((await c.call('GET', '/accelerator/v2/devices/not-a-uuid', { headers: persona.admin })).statusCode).toBe(400);
    expect((await c.call('GET', '/accelerator/cyborg/v1/accelerators')).statusCode).toBe(404);
  });

  it("a trusted proxy's X-Forwarded-Proto / -Host / -Prefix shape the links; anyone else's are ignored", async () => {
    const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'cloud.example', 'x-forwarded-prefix': '/compute-api/' };
    const viaProxy = await c.app.inject({ method: 'GET', url: '/accelerator', headers: forwarded, remoteAddress: '10.1.2.3' });
    expect(viaProxy.json<{ versions: VersionDoc[] }>().versions[0]!.links[0]!.href).toBe('https://cloud.example/compute-api/accelerator/v2');
    const v2 = await c.app.inject({ method: 'GET', url: '/v2', headers: forwarded, remoteAddress: '10.1.2.3' });
    expect(v2.json<VersionDoc>().links[0]!.href).toBe('https://cloud.example/compute-api/v2/');

    const direct = await c.app.inject({ method: 'GET', url: '/', headers: { ...forwarded, host: 'api.internal:6666' }, remoteAddress: '192.0.2.7' });
    expect(direct.json<{ versions: VersionDoc[] }>().versions[0]!.links[0]!.href).toBe('http://api.internal:6666/v2');
  });

  it('a configured public endpoint is where every link points, whatever the request says', async () => {
    const pub = await startCyborg({ hosts: ['discovery-pub'], v2: { publicEndpoint: 'https://cloud.example/accelerator/' } });
    try {
      for (const url of ['/', '/accelerator/']) {
        const res = await pub.call('GET', url, { headers: { 'x-forwarded-host': 'evil.example' } });
        expect(res.json<{ versions: VersionDoc[] }>().versions[0]!.links[0]!.href).toBe('https://cloud.example/accelerator/v2');
      }
      const devices = (await pub.call('GET', '/v2/devices', { headers: persona.admin })).json<{ devices: { uuid: string; links: { href: string }[] }[] }>()
        .devices;
      expect(devices[0]!.links[0]!.href).toBe(`https://cloud.example/accelerator/v2/devices/${devices[0]!.uuid}`);
    } finally {
      await pub.stop();
    }
  });

  it('a malformed trusted-proxy entry is refused at boot, naming it', () => {
    expect(() => compileTrust(['10.0.0.0/99'])).toThrow(/10\.0\.0\.0\/99/);
    expect(() => compileTrust(['proxy.example'])).toThrow(/proxy\.example/);
    const trust = compileTrust(['loopback', '2001:db8::/32'])!;
    expect([trust('::ffff:127.0.0.1', 0), trust('2001:db8::5', 0), trust('10.0.0.1', 0)]).toEqual([true, true, false]);
  });
});
