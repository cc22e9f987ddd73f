import { execFile, spawnSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { svc } from '../services.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { KEYSTONE_URL, password, serviceAuth, users, type PeerUser } from './peer.js';

/**
 * The real `openstack accelerator` CLI signs in to the real Keystone with a user's password, as an
 * operator's clouds.yaml would, and calls the api in keystone mode (no proxy in front): the api
 * validates that token with Keystone and applies the policy to the identity Keystone gives.
 */
const run = promisify(execFile);
const cliReady = spawnSync('openstack', ['accelerator', 'device', 'list', '--help'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!svc.keystone || (!cliReady && process.env.CI !== 'true'))('the openstack CLI with a real Keystone token, in keystone mode', () => {
  let stack: Stack;
  let app: FastifyInstance;
  let endpoint = '';
  let busy: string | undefined;
  beforeAll(async () => {
    stack = await startStack({ hosts: ['ks-cli-host'] });
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth() });
    const validator = new TokenValidator({ session, cache: { ttlMs: 300_000 } });
    app = await buildApi({
      control: stack.conductor,
      log: quietLogger(),
      v2: { authStrategy: 'keystone' },
      auth: { keystone: { validator, wwwAuthenticateUri: KEYSTONE_URL.replace(/\/v3$/, '') } },
    });
    // Where the peer's catalog says the accelerator service is (KEYSTONE_ACCELERATOR_ENDPOINT):
    // Cyborg's own port, which the api role keeps, so the CLI finds it through the catalog.
    const catalog = new URL(process.env.KEYSTONE_ACCELERATOR_ENDPOINT ?? 'http://127.0.0.1:6666/v2');
    try {
      await app.listen({ host: catalog.hostname, port: Number(catalog.port) });
      endpoint = `http://${catalog.hostname}:${(app.server.address() as AddressInfo).port}`;
    } catch (err) {
      busy = `the catalog's accelerator port ${catalog.port} is taken (${(err as Error).message})`;
    }
  });
  afterAll(async () => {
    await app?.close();
    await stack?.stop();
  });

  const as = (who: PeerUser, ...args: string[]) => {
    const { user, project } = users[who];
    return run(
      'openstack',
      [
        '--os-auth-url',
        KEYSTONE_URL,
        '--os-identity-api-version',
        '3',
        '--os-username',
        user,
        '--os-password',
        password(user),
        '--os-project-name',
        project,
        '--os-user-domain-name',
        'Default',
        '--os-project-domain-name',
        'Default',
        'accelerator',
        ...args,
        '-f',
        'json',
      ],
      { timeout: 60_000 },
    );
  };

  it('an admin lists devices with a token Keystone issued, at the endpoint the catalog names', async (ctx) => {
    if (busy) ctx.skip(busy);
    expect(endpoint).not.toBe('');
    const devices = JSON.parse((await as('admin', 'device', 'list')).stdout) as { hostname: string }[];
    expect(devices.length).toBeGreaterThan(0);
    expect(devices.every((d) => d.hostname === 'ks-cli-host')).toBe(true);
  });

  it('a project member is refused what the policy keeps for admins and managers, naming the rule', async (ctx) => {
    if (busy) ctx.skip(busy);
    await expect(as('demoMember', 'device', 'list')).rejects.toThrow(/cyborg:device:get_all/);
  });
});
