/**
 * Issue 42: the CLI signed in to Keystone afresh on every command (14–24 s each on a loaded
 * machine; 6 of 21 failed when Keystone was slow). Now, where the user allows it (`--token-cache`,
 * `CYBORG_TOKEN_CACHE`, clouds.yaml's `cache: {auth: true}`), the token is kept in a file of mode
 * 0600 until it expires and `cyborg logout` forgets it: two commands in a row make one token
 * request to the real Keystone, counted here at a proxy in front of it. A cache file that is
 * corrupt, readable by others or for another cloud is one line, removed, and signed in again.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { KEYSTONE_URL, password, serviceAuth } from '../keystone/peer.js';
import { svc } from '../services.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { cyborg } from '../cli/harness.js';

/** Keystone behind a proxy that counts the token requests (POST …/auth/tokens) made through it. */
async function countingKeystone(): Promise<{ url: string; tokenRequests: () => number; close: () => Promise<void> }> {
  const target = new URL(KEYSTONE_URL);
  let count = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && /\/auth\/tokens$/.test((req.url ?? '').split('?')[0]!)) count++;
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<
        string,
        string
      >;
      request(`${target.origin}${req.url}`, { method: req.method as 'GET', headers, body: chunks.length ? Buffer.concat(chunks) : null }).then(
        async (r) => {
          const out = Object.fromEntries(Object.entries(r.headers).filter(([k]) => !['connection', 'transfer-encoding', 'content-length'].includes(k)));
          res.writeHead(r.statusCode, out as Record<string, string>).end(Buffer.from(await r.body.arrayBuffer()));
        },
        () => res.writeHead(502).end(),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}${target.pathname}`, tokenRequests: () => count, close: () => new Promise((r) => server.close(() => r())) };
}

describe.skipIf(!svc.keystone)('the CLI keeps its Keystone token across commands where the user allows it', { timeout: 240_000 }, () => {
  let stack: Stack;
  let app: FastifyInstance;
  let keystone: Awaited<ReturnType<typeof countingKeystone>>;
  let api: string;
  const cacheHome = mkdtempSync(join(tmpdir(), 'cyborg-token-cache-'));
  const cacheDir = join(cacheHome, 'cyborg');

  beforeAll(async () => {
    stack = await startStack({ hosts: ['cache-host'], log: quietLogger() });
    // Keystone on a loaded machine takes more than the default 10 s to sign the service in.
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth(), timeoutMs: 60_000 });
    app = await buildApi({
      control: stack.conductor,
      log: quietLogger(),
      v2: { authStrategy: 'keystone' },
      auth: {
        keystone: {
          validator: new TokenValidator({ session, timeoutMs: 60_000, cache: { ttlMs: 300_000 } }),
          wwwAuthenticateUri: KEYSTONE_URL.replace(/\/v3$/, ''),
        },
      },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    keystone = await countingKeystone();
  }, 240_000);
  afterAll(async () => {
    await app?.close();
    await stack?.stop();
    await keystone?.close();
  });

  /** `cyborg <args>` in this process as the admin of the peer, with the cache under `cacheHome`. */
  async function asAdmin(args: string[], extra: Record<string, string> = {}) {
    const saved = { ...process.env };
    for (const k of Object.keys(process.env)) if (k.startsWith('OS_') || k.startsWith('CYBORG_')) delete process.env[k];
    Object.assign(process.env, {
      XDG_CACHE_HOME: cacheHome,
      OS_AUTH_URL: keystone.url,
      OS_USERNAME: 'admin',
      OS_PASSWORD: password('admin'),
      OS_PROJECT_NAME: 'admin',
      OS_USER_DOMAIN_NAME: 'Default',
      OS_PROJECT_DOMAIN_NAME: 'Default',
      ...extra,
    });
    try {
      return await cyborg(...args, '--url', api);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  }
  const cacheFiles = (): string[] => (existsSync(cacheDir) ? readdirSync(cacheDir).filter((n) => n.endsWith('.json')) : []);

  it('without leave to keep it: a token request per command, nothing written', async () => {
    const before = keystone.tokenRequests();
    expect((await asAdmin(['accelerator', 'list'])).code).toBe(0);
    expect((await asAdmin(['capacity'])).code).toBe(0);
    expect(keystone.tokenRequests() - before).toBe(2);
    expect(cacheFiles()).toEqual([]);
  });

  it('with --token-cache: two commands in a row make one token request; the file is mode 0600; logout forgets it', async () => {
    const before = keystone.tokenRequests();
    const first = await asAdmin(['accelerator', 'list', '--token-cache']);
    const second = await asAdmin(['capacity'], { CYBORG_TOKEN_CACHE: '1' });
    expect([first.code, first.stderr, second.code, second.stderr]).toEqual([0, '', 0, '']);
    expect(keystone.tokenRequests() - before).toBe(1);
    const [file] = cacheFiles();
    expect(statSync(join(cacheDir, file!)).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(cacheDir, file!), 'utf8')).not.toContain(password('admin'));

    const saved = process.env.XDG_CACHE_HOME;
    process.env.XDG_CACHE_HOME = cacheHome;
    const out = await cyborg('logout').finally(() => {
      if (saved === undefined) delete process.env.XDG_CACHE_HOME;
      else process.env.XDG_CACHE_HOME = saved;
    });
    expect(out.stdout).toBe(`signed out: removed 1 cached token(s) from ${cacheDir}\n`);
    expect(cacheFiles()).toEqual([]);
    expect((await asAdmin(['capacity', '--token-cache'])).code).toBe(0);
    expect(keystone.tokenRequests() - before).toBe(2);
  });

  it('a cache file that is corrupt, readable by others or for another cloud: one line, removed, signed in again', async () => {
    expect((await asAdmin(['capacity', '--token-cache'])).code).toBe(0);
    const path = join(cacheDir, cacheFiles()[0]!);
    const good = readFileSync(path, 'utf8');
    const tries: [string, () => void, RegExp][] = [
      ['corrupt', () => writeFileSync(path, '{"version": 1, "tok', { mode: 0o600 }), /not used: it is not JSON; removed it, signing in again/],
      [
        'world-readable',
        () => (writeFileSync(path, good, { mode: 0o600 }), chmodSync(path, 0o644)),
        /not used: others may read it \(mode 0644, owner uid \d+\)/,
      ],
      [
        'another cloud',
        () => writeFileSync(path, good.replace(JSON.stringify(keystone.url), JSON.stringify('http://keystone.elsewhere:5000/v3')), { mode: 0o600 }),
        /not used: it is for another cloud \(Keystone http:\/\/keystone\.elsewhere:5000\/v3, user admin@Default, project admin@Default\), not http:\/\/127\.0\.0\.1:\d+\/v3/,
      ],
    ];
    for (const [what, spoil, said] of tries) {
      spoil();
      const before = keystone.tokenRequests();
      const r = await asAdmin(['capacity', '--token-cache']);
      expect([what, r.code]).toEqual([what, 0]);
      const lines = r.stderr.split('\n').filter(Boolean);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^cyborg: warning: token cache ${path.replace(/[.]/g, '\\.')} ${said.source.replace(/^not used/, 'not used')}`));
      expect(keystone.tokenRequests() - before).toBe(1);
      expect(statSync(path).mode & 0o777).toBe(0o600);
    }
  });
});
