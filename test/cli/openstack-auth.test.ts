import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApi } from '../../api/server.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { KEYSTONE_URL, password, serviceAuth, tokenOf } from '../keystone/peer.js';
import { svc } from '../services.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { cyborg as inProcess } from './harness.js';

/**
 * An operator of a Keystone cloud uses `cyborg` as she uses `openstack`: the same OS_*
 * variables, the same clouds.yaml (with its password in secure.yaml), or an application
 * credential, and the CLI finds the API in Keystone's catalog (service type `accelerator`). The
 * real `openstack accelerator device list` runs beside it with the same environment. A wrong
 * password, an unknown cloud or a clouds.yaml that is not YAML is one line and an exit code.
 */
const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const openstackReady = spawnSync('openstack', ['accelerator', 'device', 'list', '--help'], { stdio: 'ignore' }).status === 0;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment of a fresh shell: none of this runner's OS_* or CYBORG_* settings. */
function cleanEnv(extra: Record<string, string>, home: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OS_') && !k.startsWith('CYBORG_')));
  return { ...env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), ...extra };
}

async function shell(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<Ran> {
  try {
    const { stdout, stderr } = await run(cmd, args, { cwd, env, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Listens where the peer's catalog says the accelerator service is, waiting while another story holds that port. */
async function listenAtCatalog(app: FastifyInstance): Promise<void> {
  const at = new URL(process.env.KEYSTONE_ACCELERATOR_ENDPOINT ?? 'http://127.0.0.1:6666/v2');
  // A port in use is "not yet" (thrown: tried again); any other error ends the wait at once.
  const failed = await vi.waitFor(
    () =>
      app.listen({ host: at.hostname, port: Number(at.port) }).then(
        () => undefined,
        (err: NodeJS.ErrnoException) => {
          if (err.code === 'EADDRINUSE') throw err;
          return err;
        },
      ),
    { timeout: 90_000, interval: 250 },
  );
  if (failed) throw failed;
}

describe.skipIf(!svc.keystone)('cyborg signs in as the openstack CLI does, against the real Keystone', () => {
  let stack: Stack;
  let app: FastifyInstance;
  let home: string;
  let cwd: string;
  let appCred: { id: string; secret: string; userId: string; token: string } | undefined;

  // The real bin where the shell's environment and working directory are the story; in process otherwise (a spawn costs seconds).
  const cyborg = (args: string[], env: Record<string, string>, dir = cwd) =>
    shell(process.execPath, [join(root, 'cli/bin.js'), ...args], cleanEnv(env, home), dir);
  const cyborgWith = async (args: string[], env: Record<string, string>) => {
    const saved = { ...process.env };
    for (const k of Object.keys(process.env)) if (k.startsWith('OS_') || k.startsWith('CYBORG_')) delete process.env[k];
    Object.assign(process.env, { XDG_CONFIG_HOME: join(home, '.config') }, env);
    try {
      return await inProcess(...args);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  };
  const openstack = (args: string[], env: Record<string, string>, dir = cwd) => shell('openstack', [...args, '-f', 'json'], cleanEnv(env, home), dir);
  const adminVars = {
    OS_AUTH_URL: KEYSTONE_URL,
    OS_USERNAME: 'admin',
    OS_PASSWORD: password('admin'),
    OS_PROJECT_NAME: 'admin',
    OS_USER_DOMAIN_NAME: 'Default',
    OS_PROJECT_DOMAIN_NAME: 'Default',
    OS_REGION_NAME: process.env.KEYSTONE_REGION ?? 'RegionOne',
    OS_INTERFACE: 'public',
    OS_IDENTITY_API_VERSION: '3',
  };
  const names = (r: Ran): string[] => (JSON.parse(r.stdout) as { host: string }[]).map((a) => a.host);

  beforeAll(async () => {
    stack = await startStack({ hosts: ['os-auth-host'], log: quietLogger() });
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth() });
    app = await buildApi({
      control: stack.conductor,
      log: quietLogger(),
      v2: { authStrategy: 'keystone' },
      auth: { keystone: { validator: new TokenValidator({ session, cache: { ttlMs: 300_000 } }), wwwAuthenticateUri: KEYSTONE_URL.replace(/\/v3$/, '') } },
    });
    await listenAtCatalog(app);
    home = mkdtempSync(join(tmpdir(), 'cyborg-os-home-'));
    cwd = join(home, 'work');
    mkdirSync(cwd);
    // The cloud in ./clouds.yaml, its password apart in ~/.config/openstack/secure.yaml, as operators keep it.
    writeFileSync(
      join(cwd, 'clouds.yaml'),
      [
        'clouds:',
        '  peer:',
        '    auth:',
        `      auth_url: ${KEYSTONE_URL}`,
        '      username: admin',
        '      project_name: admin',
        '      user_domain_name: Default',
        '      project_domain_name: Default',
        `    region_name: ${adminVars.OS_REGION_NAME}`,
        '    interface: public',
        '    identity_api_version: 3',
        '',
      ].join('\n'),
    );
    mkdirSync(join(home, '.config/openstack'), { recursive: true });
    writeFileSync(join(home, '.config/openstack/secure.yaml'), `clouds:\n  peer:\n    auth:\n      password: ${password('admin')}\n`);
    // An application credential of the admin's (Keystone: POST /v3/users/{id}/application_credentials).
    const admin = await tokenOf('admin');
    const made = await request(`${KEYSTONE_URL}/users/${admin.userId}/application_credentials`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': admin.token },
      body: JSON.stringify({ application_credential: { name: `cyborg-cli-${process.pid}-${Date.now()}`, description: 'test/cli/openstack-auth.test.ts' } }),
    });
    const body = (await made.body.json()) as { application_credential: { id: string; secret: string } };
    expect(made.statusCode).toBe(201);
    appCred = { ...body.application_credential, userId: admin.userId, token: admin.token };
  }, 150_000);

  afterAll(async () => {
    if (appCred)
      await request(`${KEYSTONE_URL}/users/${appCred.userId}/application_credentials/${appCred.id}`, {
        method: 'DELETE',
        headers: { 'x-auth-token': appCred.token },
      }).then((r) => r.body.dump());
    await app?.close();
    await stack?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('with the OS_* variables of an openrc, both CLIs list the fleet at the endpoint the catalog names', async () => {
    const mine = await cyborg(['accelerator', 'list', '--json'], adminVars);
    expect(mine.stderr).toBe('');
    expect(mine.code).toBe(0);
    expect(names(mine).length).toBeGreaterThan(0);
    expect(new Set(names(mine))).toEqual(new Set(['os-auth-host']));
    if (!openstackReady && process.env.CI !== 'true') return;
    const theirs = await openstack(['accelerator', 'device', 'list'], adminVars);
    expect(theirs.stderr).toBe('');
    expect((JSON.parse(theirs.stdout) as { hostname: string }[]).map((d) => d.hostname)).toContain('os-auth-host');
  });

  it('with OS_CLOUD, clouds.yaml in the working directory and the password in secure.yaml', async () => {
    const mine = await cyborg(['accelerator', 'list', '--json'], { OS_CLOUD: 'peer' });
    expect([mine.code, mine.stderr]).toEqual([0, '']);
    expect(new Set(names(mine))).toEqual(new Set(['os-auth-host']));
    if (!openstackReady && process.env.CI !== 'true') return;
    const theirs = await openstack(['accelerator', 'device', 'list'], { OS_CLOUD: 'peer' });
    expect(theirs.stderr).toBe('');
    expect((JSON.parse(theirs.stdout) as { hostname: string }[]).map((d) => d.hostname)).toContain('os-auth-host');
  });

  it('with an application credential, and --os-* flags over the variables', async () => {
    const vars = {
      OS_AUTH_URL: KEYSTONE_URL,
      OS_AUTH_TYPE: 'v3applicationcredential',
      OS_APPLICATION_CREDENTIAL_ID: appCred!.id,
      OS_APPLICATION_CREDENTIAL_SECRET: appCred!.secret,
    };
    const mine = await cyborg(['accelerator', 'list', '--json'], vars);
    expect([mine.code, mine.stderr]).toEqual([0, '']);
    expect(new Set(names(mine))).toEqual(new Set(['os-auth-host']));
    // A flag wins over its variable: the right secret on the command line beats a wrong one in the environment.
    const flagged = await cyborgWith(['accelerator', 'list', '--json', '--os-application-credential-secret', appCred!.secret], {
      ...vars,
      OS_APPLICATION_CREDENTIAL_SECRET: 'wrong',
    });
    expect(flagged.code).toBe(0);
    if (!openstackReady && process.env.CI !== 'true') return;
    const theirs = await openstack(['accelerator', 'device', 'list'], vars);
    expect(theirs.stderr).toBe('');
    expect((JSON.parse(theirs.stdout) as { hostname: string }[]).map((d) => d.hostname)).toContain('os-auth-host');
  });

  it('a reader is refused an enable with the rule that refused it, exit 7', async () => {
    const target = stack.conductor.listAccelerators()[0]!;
    const r = await cyborgWith(['accelerator', 'enable', target.id], {
      ...adminVars,
      OS_USERNAME: 'demo-reader',
      OS_PASSWORD: password('demo-reader'),
      OS_PROJECT_NAME: 'demo',
    });
    expect(r.code).toBe(7);
    expect(r.stderr).toMatch(
      /^cyborg: Policy doesn't allow cyborg:operator:accelerator:\w+ to be performed\. \[request\.forbidden\]\n {2}deployment: http:\S+ \(region \S+, Keystone \S+\)\n$/,
    );
    expect(stack.conductor.getAccelerator(target.id).state).toBe('inactive');
  });

  it('a wrong password, an unknown cloud, a clouds.yaml that is not YAML: one line each, and its exit code', async () => {
    const wrong = await cyborgWith(['accelerator', 'list'], { ...adminVars, OS_PASSWORD: 'not-the-password' });
    expect([wrong.code, wrong.stdout]).toEqual([7, '']);
    expect(wrong.stderr).toBe(
      `cyborg: Keystone at ${KEYSTONE_URL} refused the password of user admin (401: The request you have made requires authentication.)\n` +
        `  deployment: the accelerator endpoint of Keystone's catalog (region ${adminVars.OS_REGION_NAME}, Keystone ${KEYSTONE_URL})\n`,
    );

    const clouds = { OS_CLIENT_CONFIG_FILE: join(cwd, 'clouds.yaml') };
    const unknown = await cyborgWith(['accelerator', 'list'], { ...clouds, OS_CLOUD: 'nope' });
    expect(unknown.code).toBe(8);
    expect(unknown.stderr).toBe(
      `cyborg: cloud "nope" was not found in ${join(cwd, 'clouds.yaml')} + ${join(home, '.config/openstack/secure.yaml')} (clouds there: peer)\n`,
    );

    const broken = join(home, 'broken');
    mkdirSync(broken, { recursive: true });
    writeFileSync(join(broken, 'clouds.yaml'), 'clouds:\n  peer:\n    auth: {auth_url: [unclosed\n');
    const bad = await cyborgWith(['accelerator', 'list'], { OS_CLIENT_CONFIG_FILE: join(broken, 'clouds.yaml'), OS_CLOUD: 'peer' });
    expect(bad.code).toBe(8);
    expect(bad.stderr.split('\n')).toHaveLength(2);
    expect(bad.stderr).toMatch(new RegExp(`^cyborg: ${join(broken, 'clouds.yaml').replace(/[.]/g, '\\.')} is not valid YAML \\(line \\d+, column \\d+\\): `));
  });

  it('with nothing set, a keystone-mode API is a 401 that says how to sign in; a noauth API needs nothing (test/cli/operator-cli.test.ts)', async () => {
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const r = await cyborgWith(['accelerator', 'list', '--url', url], {});
    expect(r.code).toBe(7);
    expect(r.stderr).toContain('No X-Auth-Token was sent');
    expect(r.stderr).toContain('OS_CLOUD');
  });
});
