import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, DRIVER_NAMES, loadConfig, type LoadOptions } from './index.js';
import { configSample } from './sample.js';

const dir = mkdtempSync(join(tmpdir(), 'cyborg-conf-'));
let n = 0;
function conf(text: string): string {
  const path = join(dir, `cyborg-${++n}.conf`);
  writeFileSync(path, text);
  return path;
}

function load(text: string, env: Record<string, string> = {}, opts: LoadOptions = {}): { config: ReturnType<typeof loadConfig>; warnings: string[] } {
  const warnings: string[] = [];
  const config = loadConfig({}, env, { configFiles: [conf(text)], onWarning: (m) => warnings.push(m), ...opts });
  return { config, warnings };
}

describe('cyborg.conf, as an OpenStack operator writes it', () => {
  it("reads Cyborg's sections and option names onto the schema", () => {
    const { config, warnings } = load(
      [
        '[DEFAULT]',
        'debug = True',
        'host = compute-7',
        'transport_url = nats://ctl-1:4222,nats://ctl-2:4222',
        '[api]',
        'host_ip = 0.0.0.0',
        'port = 6666',
        'public_endpoint = https://cloud.example/accelerator',
        '[database]',
        'connection = postgresql+psycopg2://cyborg:secret@db/cyborg',
        '[agent]',
        'enabled_drivers = generic_driver',
        '[placement]',
        'auth_type = password',
        'auth_url = https://keystone.example/identity/v3',
        'username = cyborg',
        'region_name = RegionTwo',
        'valid_interfaces = internal',
        '[keystone_authtoken]',
        'www_authenticate_uri = https://keystone.example/identity',
        'service_token_roles_required = true',
        '[oslo_policy]',
        'enforce_new_defaults = false',
        'enforce_scope = false',
        'policy_file = /etc/cyborg/policy.yaml',
      ].join('\n'),
    );
    expect(warnings).toEqual([]);
    expect(config.logLevel).toBe('debug');
    expect(config.host).toBe('compute-7');
    expect(config.natsUrl).toBe('nats://ctl-1:4222,nats://ctl-2:4222');
    expect(config.listen).toEqual({ address: '0.0.0.0', port: 6666, uiPort: -1 });
    expect(config.v2.publicEndpoint).toBe('https://cloud.example/accelerator');
    expect(config.databaseUrl).toBe('postgresql://cyborg:secret@db/cyborg');
    expect(config.agent.enabledDrivers).toEqual(['generic_driver']);
    expect(config.placement).toMatchObject({
      authType: 'password',
      authUrl: 'https://keystone.example/identity/v3',
      username: 'cyborg',
      regionName: 'RegionTwo',
      validInterfaces: ['internal'],
    });
    expect(config.keystoneAuthtoken.wwwAuthenticateUri).toBe('https://keystone.example/identity');
    expect(config.v2.serviceTokenRequired).toBe(true);
    expect(config.osloPolicy).toEqual({ enforceScope: false, policyFile: '/etc/cyborg/policy.yaml' });
  });

  it("keeps oslo.config's rules: values over indented lines, repeated options, # and ; inside a value", () => {
    const { config } = load(
      [
        '[agent]',
        'enabled_drivers = fake_driver,',
        '    generic_driver',
        '[keystone_authtoken]',
        'password = p#ss;word',
        'service_token_roles = service',
        'service_token_roles = admin',
        '# a comment',
        '; another',
        '[pci]',
        'passthrough_whitelist = [{"vendor_id": "10de",',
        '  "product_id": "1eb8"}]',
      ].join('\n'),
    );
    expect(config.agent.enabledDrivers).toEqual(['fake_driver', 'generic_driver']);
    expect(config.keystoneAuthtoken.password).toBe('p#ss;word');
    expect(config.v2.serviceTokenRoles).toEqual(['service', 'admin']);
    expect(JSON.parse(config.generic.passthroughWhitelist)).toEqual([{ vendor_id: '10de', product_id: '1eb8' }]);
  });

  it("takes Cyborg's seconds where Cyborg has them", () => {
    const { config } = load('[DEFAULT]\nperiodic_interval = 30\n[placement]\ntimeout = 2.5\n');
    expect(config.timing.discoveryIntervalMs).toBe(30_000);
    expect(config.placement.timeoutMs).toBe(2_500);
  });

  it('flags beat the environment, which beats the file, which beats the defaults', () => {
    const path = conf('[api]\nport = 7001\nhost_ip = 10.0.0.1\n[fake_driver]\ngpus = 5\n');
    const config = loadConfig({ listen: { port: 7003 } }, { CYBORG_PORT: '7002', CYBORG_LISTEN_ADDRESS: '10.0.0.2' }, { configFiles: [path] });
    expect(config.listen).toEqual({ address: '10.0.0.2', port: 7003, uiPort: -1 });
    expect(config.fake.gpus).toBe(5);
    expect(config.fake.nics).toBe(1);
  });

  it('a later file beats an earlier one; CYBORG_CONFIG_FILE names the file when no flag does', () => {
    const a = conf('[api]\nport = 7001\n');
    const b = conf('[api]\nport = 7002\n');
    expect(loadConfig({}, {}, { configFiles: [a, b] }).listen.port).toBe(7002);
    expect(loadConfig({}, { CYBORG_CONFIG_FILE: a }).listen.port).toBe(7001);
  });

  it('refuses a section it does not know, naming the one meant: a misspelt [database] must not leave the conductor on nothing', () => {
    const path = conf('[databse]\nconnection = postgresql://cyborg@db/cyborg\n');
    expect(() => loadConfig({}, {}, { configFiles: [path] })).toThrow(
      new ConfigError(`invalid configuration: ${path}: unknown section [databse] (did you mean [database]?)`),
    );
    const far = conf('[frobnicate]\nx = 1\n');
    expect(() => loadConfig({}, {}, { configFiles: [far] })).toThrow(/unknown section \[frobnicate\] \(sections read: DEFAULT, .*database/);
  });

  it('names an unknown option, or a section of another OpenStack service, in a warning and goes on', () => {
    const { config, warnings } = load('[api]\napi_workers = 4\nport = 7005\n[cinder]\nauth_url = x\n');
    expect(config.listen.port).toBe(7005);
    expect(warnings).toEqual([
      expect.stringMatching(/\[api\]: unknown option api_workers \(ignored\)$/),
      expect.stringMatching(/: unknown section \[cinder\] \(ignored\)$/),
    ]);
  });

  it('a bad value stops the program naming the file, section and option, and the value', () => {
    const path = conf('[api]\nport = 70000\n');
    expect(() => loadConfig({}, {}, { configFiles: [path] })).toThrow(
      new ConfigError(`invalid configuration: ${path} [api] port = 70000: Expected integer to be less or equal to 65535`),
    );
    const notInt = conf('[fake_driver]\ngpus = many\n');
    expect(() => loadConfig({}, {}, { configFiles: [notInt] })).toThrow(`${notInt} [fake_driver] gpus: "many" is not an integer`);
    const driver = conf('[agent]\nenabled_drivers = amd_gpu_driver\n');
    expect(() => loadConfig({}, {}, { configFiles: [driver] })).toThrow(
      `${driver} [agent] enabled_drivers = amd_gpu_driver: Expected union value (one of ${DRIVER_NAMES.join(', ')})`,
    );
    const typo = conf('[agent]\nenabled_drivers = fake_driver, fake_drvier\n');
    expect(() => loadConfig({}, {}, { configFiles: [typo] })).toThrow(`${typo} [agent] enabled_drivers = fake_drvier: Expected union value`);
    const rabbit = conf('[DEFAULT]\ntransport_url = rabbit://guest:guest@ctl:5672/\n');
    expect(() => loadConfig({}, {}, { configFiles: [rabbit] })).toThrow(/\[DEFAULT\] transport_url: this Cyborg speaks NATS/);
  });

  it('an operator who pastes a whole file into a variable gets its start back, not the file', () => {
    const pasted = `fake_driver,${'x'.repeat(10_000)}`;
    const err = (() => {
      try {
        loadConfig({}, { CYBORG_ENABLED_DRIVERS: pasted });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).toMatch(/^invalid configuration: environment variable CYBORG_ENABLED_DRIVERS = x{64}…: Expected union value/);
    expect(err!.message.length).toBeLessThan(400);
  });

  it('a listen address that is neither an IP address nor a host name is refused at load, before anything binds', () => {
    expect(() => load('[api]\nhost_ip = not an address\n')).toThrow(
      /\[api\] host_ip = "not an address": not an IP address or a host name; set one of this machine's addresses, or 0\.0\.0\.0 for all$/,
    );
    expect(() => loadConfig({}, { CYBORG_LISTEN_ADDRESS: '999.1.1.1' })).toThrow(
      "invalid configuration: environment variable CYBORG_LISTEN_ADDRESS = 999.1.1.1: not an IP address or a host name; set one of this machine's addresses, or 0.0.0.0 for all",
    );
    for (const ok of ['0.0.0.0', '::', 'fe80::1', 'controller-1', 'api.cloud.example'])
      expect(loadConfig({}, { CYBORG_LISTEN_ADDRESS: ok }).listen.address).toBe(ok);
  });

  it('a trusted proxy the API could not compile is refused at load, naming the entry', () => {
    expect(() => loadConfig({}, { CYBORG_TRUSTED_PROXIES: 'loopback,garbage' })).toThrow(
      'invalid configuration: environment variable CYBORG_TRUSTED_PROXIES = garbage: neither an IP address, a CIDR (10.0.0.0/8) nor "loopback"',
    );
    expect(() => load('[api]\ntrusted_proxies = 10.0.0.0/33\n')).toThrow(/\[api\] trusted_proxies = 10\.0\.0\.0\/33: neither/);
    expect(loadConfig({}, { CYBORG_TRUSTED_PROXIES: 'loopback, 10.0.0.0/8, 2001:db8::/32, 192.0.2.7' }).v2.trustedProxies).toHaveLength(4);
  });

  it('a public endpoint that is not an http(s) URL is refused, as the Placement and Nova URLs are: every link would be built under it', () => {
    expect(() => loadConfig({}, { CYBORG_PUBLIC_ENDPOINT: 'notaurl' })).toThrow(
      "invalid configuration: environment variable CYBORG_PUBLIC_ENDPOINT = notaurl: Expected string to match '^https?://'",
    );
    expect(loadConfig({}, { CYBORG_PUBLIC_ENDPOINT: 'https://cloud.example/accelerator' }).v2.publicEndpoint).toBe('https://cloud.example/accelerator');
  });

  it("an Xid policy that names a code outside NVIDIA's catalogue, or one code twice, stops the program naming the option", () => {
    const { config } = load('[gpu_devices]\nxid_ignored = 94\nxid_transient = 13, 31\n');
    expect(config.gpu).toMatchObject({ xidIgnored: ['94'], xidTransient: ['13', '31'], xidFatal: [] });
    const typo = conf('[gpu_devices]\nxid_fatal = 79, 790\n');
    expect(() => loadConfig({}, {}, { configFiles: [typo] })).toThrow(
      `${typo} [gpu_devices] xid_fatal: 790 is not an Xid code of NVIDIA's catalogue (1 to 199)`,
    );
    const twice = conf('[gpu_devices]\nxid_fatal = 79\nxid_ignored = 79\n');
    expect(() => loadConfig({}, {}, { configFiles: [twice] })).toThrow(`${twice} [gpu_devices] xid_ignored: Xid 79 is also in [gpu_devices] xid_fatal`);
    expect(() => loadConfig({}, { CYBORG_GPU_XID_IGNORED: 'thirteen' })).toThrow(/environment variable CYBORG_GPU_XID_IGNORED/);
  });

  it('a bad secret is refused without being echoed', () => {
    const path = conf('[database]\nconnection = mysql+pymysql://cyborg:hunter2@db/cyborg\n');
    expect(() => loadConfig({}, {}, { configFiles: [path] })).toThrow(`${path} [database] connection: not a valid value`);
    try {
      loadConfig({}, {}, { configFiles: [path] });
    } catch (err) {
      expect((err as Error).message).not.toContain('hunter2');
    }
  });

  it('a bad environment variable is named too', () => {
    expect(() => loadConfig({}, { CYBORG_PORT: 'http' })).toThrow('environment variable CYBORG_PORT: "http" is not an integer');
    expect(() => loadConfig({}, { CYBORG_LEASES: 'maybe' })).toThrow('environment variable CYBORG_LEASES: "maybe" is not a boolean');
  });

  it('a line that is not INI stops the program naming file and line', () => {
    const path = conf('[api]\nport 6666\n');
    expect(() => loadConfig({}, {}, { configFiles: [path] })).toThrow(`${path}:2: "port 6666" is not a section header, an option = value, or a comment`);
    expect(() => loadConfig({}, {}, { configFiles: [join(dir, 'missing.conf')] })).toThrow(/cannot read the config file .*missing\.conf: ENOENT/);
  });
});

describe('defaults by role', () => {
  it("the all-in-one listens on a port browsers open, the api role on Cyborg's 6666", () => {
    expect(loadConfig({}, {}, { role: 'all-in-one' }).listen.port).toBe(6680);
    expect(loadConfig({}, {}, { role: 'api' }).listen.port).toBe(6666);
  });

  it('a production agent loads no driver it was not told to; the all-in-one has the fake one', () => {
    expect(loadConfig({}, {}, { role: 'agent' }).agent.enabledDrivers).toEqual([]);
    expect(loadConfig({}, {}, { role: 'all-in-one' }).agent.enabledDrivers).toEqual(['fake_driver']);
    expect(loadConfig({}, { CYBORG_ENABLED_DRIVERS: 'fake_driver, generic_driver' }, { role: 'agent' }).agent.enabledDrivers).toEqual([
      'fake_driver',
      'generic_driver',
    ]);
  });

  it('conductor and agent on one host listen for metrics on different ports', () => {
    const agent = loadConfig({}, {}, { role: 'agent' }).distributed.metricsPort;
    const conductor = loadConfig({}, {}, { role: 'conductor' }).distributed.metricsPort;
    expect(agent).not.toBe(conductor);
    expect(loadConfig({}, {}, { role: 'agent', configFiles: [conf('[agent]\nmetrics_port = 9300\n')] }).distributed.metricsPort).toBe(9300);
    expect(loadConfig({}, { CYBORG_METRICS_PORT: '-1' }, { role: 'agent' }).distributed.metricsPort).toBe(-1);
  });
});

describe('cyborg config sample', () => {
  it('is a file the loader reads without a warning, every option commented out', () => {
    const { config, warnings } = load(configSample());
    expect(warnings).toEqual([]);
    expect(config.listen.port).toBe(6680);
  });

  it('names every section and option the loader knows, with its environment variable', () => {
    const sample = configSample();
    for (const line of [
      '[DEFAULT]',
      '[api]',
      '[database]',
      '[agent]',
      '[placement]',
      '[nova]',
      '[keystone_authtoken]',
      '[oslo_policy]',
      '#transport_url = ',
      '#enabled_drivers = ',
      '# Environment: DATABASE_URL',
    ]) {
      expect(sample).toContain(line);
    }
  });
});
