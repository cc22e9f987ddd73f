import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { BIN, cyborgProcess, errorLines, scratchDir, startCyborg } from './spawn.js';

/** A port some other program holds. */
async function taken(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  return { server, port: typeof addr === 'object' && addr ? addr.port : 0 };
}

const prefix = (): string => `su${randomBytes(3).toString('hex')}`;

describe('each start-up mistake is one line and a documented exit status, through the real binary', () => {
  it('a TLS file the configuration names that is not there: exit 1 naming [nats] tls_ca_file, before anything connects', async () => {
    const r = await cyborgProcess(['agent', '--nats', 'tls://127.0.0.1:4222', '--metrics-port', '-1'], { env: { NATS_TLS_CA_FILE: '/nonexistent/ca.pem' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('cyborg: invalid configuration: [nats] tls_ca_file (NATS_TLS_CA_FILE): cannot read /nonexistent/ca.pem (ENOENT)\n');
  });

  it('a port out of range, or not a number: exit 1 naming the flag or the variable the operator used, and the value', async () => {
    const [high, word, envHigh] = await Promise.all([
      cyborgProcess(['api', '--nats', 'nats://127.0.0.1:4222', '--port', '70000']),
      cyborgProcess(['api', '--nats', 'nats://127.0.0.1:4222'], { env: { CYBORG_PORT: 'http' } }),
      // all-in-one's --port also reads CYBORG_PORT (its help says so): the variable is still what is named.
      cyborgProcess(['all-in-one'], { env: { CYBORG_PORT: '99999' } }),
    ]);
    expect(high.code).toBe(1);
    expect(high.stderr).toBe('cyborg: invalid configuration: --port = 70000: Expected integer to be less or equal to 65535\n');
    expect(word.code).toBe(1);
    expect(word.stderr).toMatch(/^cyborg: invalid configuration: environment variable CYBORG_PORT: .*\n$/);
    expect(envHigh).toMatchObject({
      code: 1,
      stderr: 'cyborg: invalid configuration: environment variable CYBORG_PORT = 99999: Expected integer to be less or equal to 65535\n',
    });
  });

  it('db migrate names DATABASE_URL when that is what was set, though --database-url reads it too', async () => {
    const [env, flag] = await Promise.all([
      cyborgProcess(['db', 'migrate'], { env: { DATABASE_URL: 'mysql://cyborg:s3cret@db/cyborg' } }),
      cyborgProcess(['db', 'migrate', '--database-url', 'mysql://cyborg:s3cret@db/cyborg']),
    ]);
    expect(env).toMatchObject({
      code: 1,
      stderr: "cyborg: invalid configuration: environment variable DATABASE_URL = ***: Expected string to match '^(postgres(ql)?://|memory://$)'\n",
    });
    expect(flag).toMatchObject({
      code: 1,
      stderr: "cyborg: invalid configuration: --database-url = ***: Expected string to match '^(postgres(ql)?://|memory://$)'\n",
    });
  });

  it('a listen address that cannot be an address, or a host name that does not resolve: one line each naming it, not a stack', async () => {
    const [shape, unresolved] = await Promise.all([
      cyborgProcess(['all-in-one'], { env: { CYBORG_LISTEN_ADDRESS: '999.1.1.1' } }),
      cyborgProcess(['all-in-one', '--port', '0', '--listen', 'no-such-host.invalid'], { env: { CYBORG_DATA_DIR: 'state' } }),
    ]);
    expect(shape).toMatchObject({
      code: 1,
      stderr:
        "cyborg: invalid configuration: environment variable CYBORG_LISTEN_ADDRESS = 999.1.1.1: not an IP address or a host name; set one of this machine's addresses, or 0.0.0.0 for all\n",
    });
    expect(unresolved.code).toBe(5);
    expect(errorLines(unresolved.stderr)).toEqual([
      expect.stringMatching(
        /^cyborg: --listen = no-such-host\.invalid: the name does not resolve \((ENOTFOUND|EAI_AGAIN)\); set one of this machine's addresses or host names, or 0\.0\.0\.0 for all$/,
      ),
    ]);
  });

  it('a passthrough whitelist that is not JSON: exit 1 naming it, whatever drivers are enabled (only the fake one here)', async () => {
    const cwd = scratchDir();
    writeFileSync(join(cwd, 'cyborg.conf'), '[pci]\npassthrough_whitelist = {"vendor_id": "10de"\n');
    const [env, file] = await Promise.all([
      cyborgProcess(['all-in-one', '--port', '0'], { env: { CYBORG_PCI_PASSTHROUGH_WHITELIST: '{bad' } }),
      cyborgProcess(['agent', '--nats', 'nats://127.0.0.1:1', '--config-file', 'cyborg.conf'], { cwd, env: { CYBORG_ENABLED_DRIVERS: 'generic_driver' } }),
    ]);
    expect(env.code).toBe(1);
    expect(errorLines(env.stderr)).toEqual([
      expect.stringMatching(
        /^cyborg: invalid configuration: environment variable CYBORG_PCI_PASSTHROUGH_WHITELIST = \{bad: passthrough whitelist is not JSON: .*; write a JSON object or array of objects, as Nova's \[pci\] passthrough_whitelist$/,
      ),
    ]);
    expect(file.code).toBe(1);
    expect(errorLines(file.stderr)).toEqual([
      expect.stringMatching(
        /^cyborg: invalid configuration: cyborg\.conf \[pci\] passthrough_whitelist = \{"vendor_id": "10de": passthrough whitelist is not JSON/,
      ),
    ]);
  });

  it("a data directory that is a file: exit 1 naming the variable or flag that set it, not ENOTDIR and a stack (the all-in-one's database, the agent's cache)", async () => {
    const cwd = scratchDir();
    writeFileSync(join(cwd, 'state'), 'not a directory\n');
    const [allInOne, agent] = await Promise.all([
      cyborgProcess(['all-in-one', '--port', '0'], { cwd, env: { CYBORG_DATA_DIR: 'state' } }),
      cyborgProcess(['agent', '--nats', 'nats://127.0.0.1:1', '--metrics-port', '-1', '--data-dir', 'state'], { cwd }),
    ]);
    expect(allInOne.code).toBe(1);
    expect(errorLines(allInOne.stderr)).toEqual([
      `cyborg: environment variable CYBORG_DATA_DIR = ${cwd}/state: a file is in the way of this directory; remove it, or set a directory (ENOTDIR)`,
    ]);
    expect(agent.code).toBe(1);
    expect(errorLines(agent.stderr)).toEqual([
      `cyborg: --data-dir = ${cwd}/state: a file is in the way of this directory; remove it, or set a directory (ENOTDIR)`,
    ]);
  });

  it('NATS that does not answer: the role says so with the URL, and keeps waiting for it', async () => {
    const role = startCyborg(['conductor', '--nats', 'nats://cyborg:s3cret@127.0.0.1:1', '--database', 'memory://', '--no-leases', '--metrics-port', '-1']);
    try {
      const line = await role.waitFor(/NATS unreachable/);
      expect(JSON.parse(line)).toMatchObject({ level: 40, nats: 'nats://***@127.0.0.1:1', option: '[DEFAULT] transport_url (NATS_URL, --nats)' });
      expect(role.output()).not.toContain('s3cret');
      expect(role.output()).not.toMatch(/\n\s+at /);
    } finally {
      await role.kill();
    }
  });

  describe.skipIf(!svc.nats)('with NATS', () => {
    let other: Awaited<ReturnType<typeof taken>>;
    beforeAll(async () => {
      other = await taken();
    });
    afterAll(() => {
      other?.server.close();
    });

    it("the api's port held by another program: exit 5 naming the flag that set it", async () => {
      const r = await cyborgProcess(['api', '--nats', svc.nats!, '--prefix', prefix(), '--port', String(other.port)]);
      expect(r.code).toBe(5);
      expect(r.stderr).toBe(`cyborg: --port = ${other.port}: 127.0.0.1:${other.port} is in use by another process; stop it or set another port\n`);
    });

    it("an address that is not this machine's: exit 5 naming the flag that set it", async () => {
      const r = await cyborgProcess(['api', '--nats', svc.nats!, '--prefix', prefix(), '--port', '0', '--listen', '192.0.2.1']);
      expect(r.code).toBe(5);
      expect(r.stderr).toBe('cyborg: --listen = 192.0.2.1: not an address of this machine; set one of its addresses, or 0.0.0.0 for all\n');
    });

    it('a vendor driver enabled on a host without its hardware: a warn line naming the driver', async () => {
      const p = prefix();
      const conductor = startCyborg(['conductor', '--nats', svc.nats!, '--prefix', p, '--database', 'memory://', '--no-leases', '--metrics-port', '-1']);
      const agent = startCyborg(
        [
          'agent',
          '--nats',
          svc.nats!,
          '--prefix',
          p,
          '--host',
          'bare-host',
          '--metrics-port',
          '-1',
          '--data-dir',
          mkdtempSync(join(tmpdir(), 'cyborg-agent-')),
        ],
        {
          env: { CYBORG_ENABLED_DRIVERS: 'intel_qat_driver', CYBORG_GENERIC_SYSFS_ROOT: mkdtempSync(join(tmpdir(), 'cyborg-sysfs-')) },
        },
      );
      try {
        const line = await agent.waitFor(/finds nothing to drive/, 60_000);
        expect(JSON.parse(line)).toMatchObject({ level: 40, driver: 'intel_qat_driver' });
        expect(JSON.parse(line).msg).toMatch(/^\[agent\] enabled_drivers: intel_qat_driver finds nothing to drive on this host/);
      } finally {
        await Promise.all([agent.kill(), conductor.kill()]);
      }
    });
  });
});

describe('configuration that cannot be read: one line each, exit 1, through the real binary', () => {
  it('a config file that is not a readable file, a --config-dir that is not there, one with a stray file', async () => {
    const d = mkdtempSync(join(tmpdir(), 'cyborg-conf-'));
    writeFileSync(join(d, 'nats.cfg'), '[nats]\nuser = agent\n');
    const [file, missing, stray] = await Promise.all([
      cyborgProcess(['agent', '--config-file', d]),
      cyborgProcess(['agent', '--config-dir', join(d, 'agent.conf.d')]),
      cyborgProcess(['agent', '--config-dir', d]),
    ]);
    expect(file).toMatchObject({ code: 1, stderr: `cyborg: cannot read the config file ${d}: EISDIR\n` });
    expect(missing).toMatchObject({ code: 1, stderr: `cyborg: invalid configuration: --config-dir ${d}/agent.conf.d: no such directory\n` });
    expect(stray).toMatchObject({
      code: 1,
      stderr: `cyborg: invalid configuration: --config-dir ${d}: nats.cfg is not a *.conf file (only those are read; move it out of the directory)\n`,
    });
  });
});

/** The machine's own Node when it is older than cyborg runs on (Debian 12's is 18, this image's 20). */
const OLD_NODE = (() => {
  try {
    const v = execFileSync('/usr/bin/node', ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
    return Number(v.split('.')[0]) < 22 ? v : undefined;
  } catch {
    return undefined;
  }
})();

describe.skipIf(!OLD_NODE)('on a Node older than 22 (/usr/bin/node here)', () => {
  it('--version answers; anything else is refused in one line naming the Node and what to do', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile('/usr/bin/node', [BIN, ...args], { env: { PATH: '/usr/bin:/bin' } }, (err, stdout, stderr) =>
          resolve({ code: err ? Number(err.code) : 0, stdout, stderr }),
        );
      });
    const version = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version as string;
    expect(await run(['--version'])).toMatchObject({ code: 0, stdout: `${version}\n` });
    const refused = await run(['agent']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `cyborg needs Node.js >= 22 and \`node\` here is ${OLD_NODE} (/usr/bin/node): put Node.js 22 or later first on the PATH (in a checkout, npm run / npx bring Node 24)\n`,
    );
  });
});
