/**
 * Issue 39: a Keystone that answered slowly made requests wait 120 s before their 503, although
 * the token check's timeout is 10 s: the service user's own authentication, a retry after a 401
 * and each exchange's timeout added up. Now the timeout holds end to end (openstack/keystone
 * `within`): against a stub that answers after 30 s, the caller has its "unavailable" within the
 * configured timeout plus 1 s — for a token check and for a call through a Keystone session.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { quietLogger } from '../support/log.js';
import { startStack } from '../support/stack.js';

describe('a Keystone that answers after 30 s', () => {
  let stub: Server;
  let url = '';
  const held: NodeJS.Timeout[] = [];
  beforeAll(async () => {
    stub = createServer((_req, res) => {
      held.push(setTimeout(() => res.writeHead(503).end(), 30_000));
    });
    await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(stub.address() as AddressInfo).port}/v3`;
  });
  afterAll(async () => {
    for (const t of held) clearTimeout(t);
    stub.closeAllConnections();
    await new Promise((r) => stub.close(r));
  });
  const auth = {
    type: 'password',
    username: 'cyborg',
    password: 'x',
    userDomainName: 'Default',
    projectName: 'service',
    projectDomainName: 'Default',
  } as const;

  it('a token check answers keystone.unavailable within its timeout plus 1 s', async () => {
    const timeoutMs = 1_000;
    const validator = new TokenValidator({ session: new KeystoneSession({ authUrl: url, auth, timeoutMs: 10_000 }), cache: {}, timeoutMs });
    const started = Date.now();
    await expect(validator.validate('a-token')).rejects.toMatchObject({ code: 'keystone.unavailable' });
    expect(Date.now() - started).toBeLessThanOrEqual(timeoutMs + 1_000);
  });

  it('the caller of the api gets its 503 within the configured timeout plus 1 s, on the operator and the Nova routes', async () => {
    const timeoutMs = 1_500;
    const stack = await startStack({ log: quietLogger() });
    const validator = new TokenValidator({ session: new KeystoneSession({ authUrl: url, auth, timeoutMs }), cache: {}, timeoutMs });
    const app = await buildApi({
      control: stack.conductor,
      log: quietLogger(),
      v2: { authStrategy: 'keystone' },
      auth: { keystone: { validator, wwwAuthenticateUri: url } },
    });
    try {
      await app.ready();
      for (const path of ['/cyborg/v1/accelerators', '/v2/accelerator_requests']) {
        const started = Date.now();
        const res = await app.inject({ method: 'GET', url: path, headers: { 'x-auth-token': `a-token-for-${path}` } });
        expect(res.statusCode, path).toBe(503);
        expect(Date.now() - started, path).toBeLessThanOrEqual(timeoutMs + 1_000);
      }
    } finally {
      await app.close();
      await stack.stop();
    }
  });

  it('a call through a Keystone session (Placement, Nova, Glance) gives up within its timeout plus 1 s', async () => {
    const timeoutMs = 1_000;
    const session = new KeystoneSession({ authUrl: url, auth, timeoutMs: 20_000, endpointOverride: 'http://127.0.0.1:9/placement' });
    const started = Date.now();
    await expect(session.request('/resource_providers', { method: 'GET', timeoutMs })).rejects.toThrow(/no answer within 1000 ms/);
    expect(Date.now() - started).toBeLessThanOrEqual(timeoutMs + 1_000);
  });
});
