import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventHub } from '../../model/index.js';
import { NovaNotifier } from '../../openstack/nova.js';
import { KeystoneSession } from '../../openstack/keystone/index.js';
import { KEYSTONE_URL, serviceAuth } from '../keystone/peer.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { startSynced, stopAndTidy, type Synced } from './harness.js';

/** What a recording server saw: each request's method, path and global request id. */
interface Seen {
  method: string;
  path: string;
  requestId: string | undefined;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

function body(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c)).on('end', () => resolve(Buffer.concat(parts)));
  });
}

/** Whether the Placement validates Keystone tokens (noauth2's `admin` is then 401); patient, as a busy Keystone is slow. */
async function validatesTokens(target: string): Promise<boolean> {
  const res = await request(`${target}/resource_providers`, { headers: { 'x-auth-token': 'admin' }, signal: AbortSignal.timeout(30_000) });
  await res.body.dump();
  return res.statusCode === 401;
}

/**
 * A recording proxy in front of the real Placement: it notes each call's `X-Openstack-Request-Id`
 * and forwards it (with the `cyborg` service user's token when that Placement validates Keystone
 * tokens; the client's own, noauth2's `admin`, otherwise).
 */
async function recordingPlacement(target: string): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
  const session =
    svc.keystone && (await validatesTokens(target)) ? new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth(), endpointOverride: target }) : undefined;
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const requestId = req.headers['x-openstack-request-id'];
      seen.push({ method: req.method ?? '', path: req.url ?? '', requestId: typeof requestId === 'string' ? requestId : undefined });
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && k !== 'host' && k !== 'connection' && k !== 'content-length') headers[k] = v;
      if (session) headers['x-auth-token'] = await session.token();
      const payload = await body(req);
      const up = await request(`${target}${req.url ?? '/'}`, { method: req.method as 'GET', headers, ...(payload.length ? { body: payload } : {}) });
      const out = Buffer.from(await up.body.arrayBuffer());
      res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type'] ?? 'application/json') }).end(out);
    })().catch((err: Error) => res.writeHead(502).end(err.message));
  });
  const url = await listen(server);
  return { url, seen, close: () => new Promise((r) => server.close(() => r())) };
}

/**
 * One request id across services: an operator's `enable` carries its request id (the client's
 * own `X-Openstack-Request-Id`), the Placement sync it causes sends the same id as OpenStack's
 * global request id, and Placement logs it beside its own; Nova's external event for a bind
 * carries the bind's request id.
 */
describe.skipIf(!svc.placement)('one request id across Cyborg, Placement and Nova', () => {
  let proxy: Awaited<ReturnType<typeof recordingPlacement>>;
  let s: Synced | undefined;

  beforeAll(async () => {
    proxy = await recordingPlacement(svc.placement!);
  });
  afterAll(async () => {
    await stopAndTidy(s);
    await proxy?.close();
  });

  it("an enable's request id reaches Placement with the inventory it changes, and Placement logs it", async () => {
    // The FPGA alone: the shared Placement checks each token with Keystone, so every call costs.
    s = await startSynced({ url: proxy.url, createRoots: true, api: true, fake: { gpus: 0, nics: 0 } });
    const fpga = s.accelerator('FakeDevice');
    await eventually(() => s!.sync.status(fpga.id)?.status === 'in_sync', { what: 'the FPGA first synced', timeoutMs: 90_000 });
    const requestId = `req-${randomUUID()}`;
    const res = await s.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${fpga.id}/enable`, headers: { 'x-openstack-request-id': requestId } });
    expect(res.statusCode, res.body).toBe(200);
    const write = await eventually(
      () => proxy.seen.find((x) => x.requestId === requestId && x.method === 'PUT' && x.path === `/resource_providers/${fpga.rpUuid}/inventories`),
      { what: "the inventory write with the enable's request id", timeoutMs: 90_000 },
    );
    expect(write).toBeDefined();
    // Calls made for no request (the first sync, full passes) carry none.
    expect(proxy.seen.some((x) => x.requestId === undefined)).toBe(true);
    // The peer's log (oslo.log: "[<global request id> <its own> ...]"), where this machine keeps it.
    const log = `/tmp/placement-peer-${new URL(svc.placement!).port || '80'}/placement-api.log`;
    if (existsSync(log)) await eventually(() => readFileSync(log, 'utf8').includes(requestId), { what: `${requestId} in ${log}` });
  }, 240_000);

  it("Nova's accelerator-request-bound event carries the bind's request id", async () => {
    const seen: Seen[] = [];
    const nova = createServer((req, res) => {
      const requestId = req.headers['x-openstack-request-id'];
      seen.push({ method: req.method ?? '', path: req.url ?? '', requestId: typeof requestId === 'string' ? requestId : undefined });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"events": []}');
    });
    const novaUrl = await listen(nova);
    const hub = new EventHub();
    const notifier = new NovaNotifier({
      novaUrl,
      token: 'admin',
      retries: 0,
      retryDelayMs: 1,
      hub,
      log: pino({ level: 'silent' }),
      getArq: () => ({ binding: { instanceUuid: randomUUID() } }) as never,
    }).start();
    try {
      const requestId = `req-${randomUUID()}`;
      hub.publish({ kind: 'arq', id: randomUUID(), event: 'done', from: 'BindStarted', to: 'Bound', at: new Date().toISOString(), requestId });
      await eventually(() => seen.length === 1, { what: 'the external event at Nova' });
      expect(seen[0]).toMatchObject({ method: 'POST', path: '/os-server-external-events', requestId });
    } finally {
      await notifier.stop();
      await new Promise((r) => nova.close(r));
    }
  });
});
