import { hostname } from 'node:os';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { fromText, schemaAt } from './coerce.js';
import { confFilesIn } from './config-dir.js';
import { ConfigError, StartupError, StartupExit, unusableDirectory } from './errors.js';
import { checkXidPolicy } from './xid.js';
import { distance, refuseUnknownOption } from './strict-sections.js';
import { readIniFile, type IniFile } from './ini.js';
import { OPTIONS, type OptionSpec } from './options.js';
import { PORTS } from './ports.js';
import { isListenAddress, parseTrustedProxy } from './proxies.js';

export { ConfigError, StartupError, StartupExit, unusableDirectory };
export { createLogger, silentLogger, type Logger } from './logger.js';
export { browserBlocksPort, PORTS } from './ports.js';
export { configSample } from './sample.js';
export { isListenAddress, parseTrustedProxy, type TrustedProxy } from './proxies.js';

/**
 * The names `[agent] enabled_drivers` takes: the keys of drivers/registry.ts's DRIVER_FACTORIES
 * (a test keeps them equal; config stays free of the drivers' code).
 */
export const DRIVER_NAMES = [
  'fake_driver',
  'generic',
  'generic_driver',
  'nvidia_gpu_driver',
  'intel_fpga_driver',
  'xilinx_fpga_driver',
  'intel_nic_driver',
  'intel_qat_driver',
  'pci_driver',
] as const;

/** A PCI id as `lspci -n` and docs/drivers.md write it: `vendor:product`, lower-case hex. */
const PCI_ID = Type.String({ pattern: '^[0-9a-f]{4}:[0-9a-f]{4}$', description: 'vendor:product, lower-case hex (8086:1593)' });

const keystoneAuthOptions = {
  authType: Type.Union([Type.Literal('password'), Type.Literal('v3applicationcredential')], { default: 'password', description: 'keystoneauth auth_type' }),
  authUrl: Type.Optional(Type.String({ description: 'Keystone URL (…/v3); unset: no Keystone, fixed tokens' })),
  username: Type.Optional(Type.String()),
  password: Type.Optional(Type.String()),
  projectName: Type.Optional(Type.String()),
  userDomainName: Type.String({ default: 'Default' }),
  projectDomainName: Type.String({ default: 'Default' }),
  applicationCredentialId: Type.Optional(Type.String()),
  applicationCredentialName: Type.Optional(Type.String()),
  applicationCredentialSecret: Type.Optional(Type.String()),
};

/**
 * The one configuration schema, validated once at boot. Precedence: CLI flags > environment >
 * config file (`cyborg.conf`) > defaults. The frozen result is passed down; nothing deeper reads
 * `process.env`. Where each setting lives in the file and the environment: `options.ts`.
 */
export const ConfigSchema = Type.Object({
  host: Type.String({ minLength: 1, description: "this agent's host name (compute node name)" }),
  listen: Type.Object({
    address: Type.String({
      default: '127.0.0.1',
      description: "the API's listen address: an IP address or a host name of this machine; 0.0.0.0 (or ::) for all",
    }),
    port: Type.Integer({
      minimum: 0,
      maximum: 65535,
      default: PORTS.allInOne,
      description: "HTTP API (and visualizer) port; the api role defaults to Cyborg's 6666, which browsers refuse",
    }),
    uiPort: Type.Integer({
      minimum: -1,
      maximum: 65535,
      default: -1,
      description: 'a second listener of the same API on a port browsers open, for the visualizer (on host_ip); -1: none, 0: any free port',
    }),
  }),
  logLevel: Type.Union(
    [
      Type.Literal('trace'),
      Type.Literal('debug'),
      Type.Literal('info'),
      Type.Literal('warn'),
      Type.Literal('error'),
      Type.Literal('fatal'),
      Type.Literal('silent'),
    ],
    { default: 'info' },
  ),
  logPretty: Type.Boolean(),
  dataDir: Type.String({ minLength: 1, description: 'where the embedded database and agent cache live' }),
  databaseUrl: Type.Optional(Type.String({ pattern: '^(postgres(ql)?://|memory://$)' })),
  /** The conductor's journal (see docs/persistence.md). */
  persistence: Type.Object(
    {
      unavailableAfterMs: Type.Integer({
        minimum: 1,
        default: 10_000,
        description: 'a commit waiting this long for an unreachable database is answered 503, and the change is not made',
      }),
      maxBatch: Type.Integer({ minimum: 1, default: 5_000, description: 'most commits in one group-commit flush' }),
      pool: Type.Integer({ minimum: 1, default: 4, description: 'connections to DATABASE_URL (the embedded database always uses one)' }),
      pipeline: Type.Integer({
        minimum: 1,
        maximum: 8,
        default: 2,
        description: 'flushes open at once under load, each on its own connection (at most `pool`; the embedded database always uses 1)',
      }),
      preparedStatements: Type.Boolean({
        default: true,
        description:
          'the hot-path statements are named prepared statements, planned once per connection; false behind a pooler that cannot keep them (PgBouncer in transaction mode before 1.21); the embedded database never uses them',
      }),
      /** The transition log's retention (db/retention.ts): the oldest rows beyond either limit are deleted, nothing else ever is. */
      auditMaxAgeMs: Type.Integer({
        minimum: 0,
        default: 90 * 24 * 3_600_000,
        description: 'transition-log rows older than this are deleted (0: kept whatever their age)',
      }),
      auditMaxRows: Type.Integer({ minimum: 0, default: 10_000_000, description: 'only the newest this many transition-log rows are kept (0: no limit)' }),
      auditPruneIntervalMs: Type.Integer({
        minimum: 1_000,
        default: 600_000,
        description: 'how often the oldest transition-log rows beyond the retention are deleted',
      }),
    },
    { default: {} },
  ),
  natsUrl: Type.Optional(Type.String({ minLength: 1 })),
  /** How the distributed roles authenticate to NATS (docs/distributed.md, "An authenticated bus"): one method, and TLS files. */
  nats: Type.Object(
    {
      user: Type.Optional(Type.String({ minLength: 1, description: 'NATS user (with password); nats://user:password@host in the URL works too' })),
      password: Type.Optional(Type.String()),
      token: Type.Optional(Type.String({ minLength: 1, description: 'NATS authentication token' })),
      nkeySeedFile: Type.Optional(Type.String({ minLength: 1, description: "file holding this role's nkey seed (SU…)" })),
      credsFile: Type.Optional(Type.String({ minLength: 1, description: 'a .creds file (user JWT and seed, as nsc writes it)' })),
      tlsCaFile: Type.Optional(Type.String({ minLength: 1, description: "CA that signed the server's certificate; turns TLS on (as does a tls:// URL)" })),
      tlsCertFile: Type.Optional(Type.String({ minLength: 1, description: 'client certificate, when the server verifies clients' })),
      tlsKeyFile: Type.Optional(Type.String({ minLength: 1, description: "the client certificate's key" })),
    },
    { default: {} },
  ),
  placementUrl: Type.Optional(Type.String({ pattern: '^https?://', description: "Placement's endpoint; unset: no sync (said once in the log)" })),
  placementToken: Type.String({ default: 'admin' }),
  /** Placement sync (see docs/placement.md); runs only when `placementUrl` is set. */
  placement: Type.Object(
    {
      timeoutMs: Type.Integer({ minimum: 1, default: 10_000, description: 'per-request timeout' }),
      resourceProviderName: Type.String({
        minLength: 1,
        default: '{host}',
        description: "Cyborg's resource_provider_name: the compute node provider's name; {host} is the agent's host",
      }),
      createRootProviders: Type.Optional(
        Type.Boolean({ description: 'Nova-less: create a root provider per host when none exists (default: on in all-in-one, off otherwise)' }),
      ),
      syncIntervalMs: Type.Integer({ minimum: 100, default: 60_000, description: 'full reconcile period (out-of-band changes, stale providers)' }),
      concurrency: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: 'Placement requests in flight at once (1 for a sqlite-backed Placement)' }),
      /** [placement]: with `authUrl` set, Placement is reached with Keystone tokens and found in the catalog (placementUrl, if set, overrides it). */
      ...keystoneAuthOptions,
      regionName: Type.Optional(Type.String()),
      validInterfaces: Type.Array(Type.String(), { default: ['internal', 'public'] }),
    },
    { default: {} },
  ),
  novaUrl: Type.Optional(
    Type.String({ pattern: '^https?://', description: "Nova's compute endpoint for accelerator-request-bound events; unset: none sent (said once)" }),
  ),
  /** [nova]: with `authUrl` set, Nova is reached with Keystone tokens (and a service token) and found in the catalog (novaUrl, if set, overrides it). */
  nova: Type.Object(
    {
      ...keystoneAuthOptions,
      regionName: Type.Optional(Type.String()),
      validInterfaces: Type.Array(Type.String(), { default: ['internal', 'public'] }),
    },
    { default: {} },
  ),
  /**
   * [glance]: where agents fetch the FPGA bitstreams a device profile names (`accel:bitstream_id`,
   * `accel:function_id`). With `authUrl`, Glance is found in the catalog with the service user's
   * token; `endpointOverride` names it directly (without `authUrl`: no token, for a private one).
   */
  glance: Type.Object(
    {
      ...keystoneAuthOptions,
      endpointOverride: Type.Optional(Type.String({ pattern: '^https?://', description: "Glance's image endpoint (the catalog's image entry when unset)" })),
      regionName: Type.Optional(Type.String()),
      validInterfaces: Type.Array(Type.String(), { default: ['internal', 'public'] }),
      timeoutMs: Type.Integer({ minimum: 1_000, maximum: 3_600_000, default: 300_000, description: 'one image download' }),
      maxImageBytes: Type.Integer({ minimum: 1, maximum: 2 ** 40, default: 2 * 1024 ** 3, description: 'a bigger image is refused before it fills the disk' }),
      downloadDir: Type.Optional(Type.String({ description: 'where images are fetched to; default: <state_path>/images' })),
      numRetries: Type.Integer({
        minimum: 0,
        maximum: 10,
        default: 2,
        description: "retries of a Glance request that got no answer or a 502/503/504 (Cyborg's option; its default is 0)",
      }),
    },
    { default: {} },
  ),
  /** [keystone_authtoken]: validating the tokens of API requests in keystone mode (v2.authStrategy). */
  keystoneAuthtoken: Type.Object(
    {
      ...keystoneAuthOptions,
      wwwAuthenticateUri: Type.Optional(Type.String({ description: 'sent in WWW-Authenticate on a 401; default: authUrl' })),
      tokenCacheTime: Type.Integer({ minimum: 0, default: 300, description: 'seconds a validated token is trusted before Keystone is asked again' }),
      cacheMaxEntries: Type.Integer({ minimum: 1, default: 10_000 }),
      negativeCacheTime: Type.Integer({ minimum: 0, default: 10, description: 'seconds a refused token is remembered as refused' }),
      httpConnectTimeout: Type.Integer({ minimum: 1, default: 10, description: 'seconds for one request to Keystone' }),
    },
    { default: {} },
  ),
  /** [oslo_policy] (enforce_new_defaults is v2.enforceNewDefaults). */
  osloPolicy: Type.Object(
    {
      policyFile: Type.Optional(Type.String({ description: 'policy.yaml with rule overrides; re-read on SIGHUP' })),
      enforceScope: Type.Boolean({ default: true }),
    },
    { default: {} },
  ),
  /** Cyborg v2 API: identity, policy and the Nova notifier (see docs/api-v2.md). */
  v2: Type.Object(
    {
      authStrategy: Type.Union([Type.Literal('noauth'), Type.Literal('keystone')], {
        default: 'noauth',
        description: 'noauth: identity headers and X-Auth-Token trusted as given; keystone: only what keystonemiddleware confirmed',
      }),
      serviceTokenRequired: Type.Optional(
        Type.Boolean({ description: 'bind/unbind/delete-by-instance need a service token; default: off in noauth, on in keystone' }),
      ),
      serviceTokenRoles: Type.Array(Type.String(), { default: ['service'] }),
      enforceNewDefaults: Type.Boolean({ default: false, description: 'oslo.policy enforce_new_defaults (Cyborg 2026.2 defaults to false)' }),
      publicEndpoint: Type.Optional(
        Type.String({
          pattern: '^https?://',
          description:
            "the URL where clients reach the API root (GET /), e.g. https://cloud.example/accelerator; links[].href are built under it; default: the request's scheme, host and mount",
        }),
      ),
      trustedProxies: Type.Array(Type.String(), {
        default: [],
        description: 'proxies (addresses, CIDRs or "loopback") whose X-Forwarded-Proto / -Host / -Prefix the API believes when it builds links',
      }),
      novaToken: Type.String({ default: 'admin', description: 'X-Auth-Token sent to Nova' }),
      novaRetries: Type.Integer({ minimum: 0, default: 5 }),
      novaRetryDelayMs: Type.Integer({ minimum: 1, default: 500 }),
    },
    { default: {} },
  ),
  /** What one client may cost the api process: event-stream clients and their buffers, pages, ARQs per request, write rate. */
  api: Type.Object(
    {
      sseMaxClients: Type.Integer({ minimum: 1, default: 200, description: 'event-stream clients at once; one more is answered 503 with Retry-After' }),
      sseBufferBytes: Type.Integer({
        minimum: 1024,
        default: 1_048_576,
        description: 'bytes an event-stream client may leave unread before it is dropped (event: dropped)',
      }),
      pageMax: Type.Integer({ minimum: 1, default: 1000, description: 'most items in one page of a list (limit / marker); also the default page' }),
      maxArqsPerRequest: Type.Integer({ minimum: 1, default: 64, description: 'most ARQs one POST /v2/accelerator_requests may create (groups × resources)' }),
      operatorRateLimit: Type.Integer({
        minimum: 0,
        default: 300,
        description: 'writes per minute one client (user, else address) may send to /cyborg/v1; 0: unlimited',
      }),
    },
    { default: {} },
  ),
  /** Distributed roles over NATS (see docs/distributed.md). */
  distributed: Type.Object(
    {
      subjectPrefix: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]+$', description: 'prepended to every subject; isolates deployments and tests' })),
      conductorId: Type.Optional(Type.String({ minLength: 1, description: "this conductor's lease identity; default: host name + random suffix" })),
      leases: Type.Boolean({ default: true, description: 'host ownership leases in JetStream KV (off: a single conductor owns every host)' }),
      leaseTtlMs: Type.Integer({ minimum: 100, default: 10_000 }),
      leaseRenewMs: Type.Integer({ minimum: 50, default: 2_000 }),
      requestTimeoutMs: Type.Integer({ minimum: 1, default: 10_000 }),
      viewCheckMs: Type.Integer({
        minimum: 0,
        maximum: 86_400_000,
        default: 60_000,
        description: "how often the api role compares its view with the database's digest and rebuilds it on a lasting difference; 0: never",
      }),
      metricsPort: Type.Integer({
        minimum: -1,
        maximum: 65535,
        default: PORTS.conductorMetrics,
        description:
          "this process's health + /metrics listener, whatever its role; unset: the role's own ([agent] or [conductor] metrics_port); 0: any free port, -1: off",
      }),
    },
    { default: {} },
  ),
  /** The agent role (Cyborg's `[agent]`). */
  agent: Type.Object(
    {
      enabledDrivers: Type.Array(Type.Union(DRIVER_NAMES.map((n) => Type.Literal(n))), {
        default: ['fake_driver'],
        description: `the drivers this agent loads, as Cyborg names them (docs/drivers.md): ${DRIVER_NAMES.join(', ')} (the all-in-one defaults to fake_driver; the agent role to none)`,
      }),
      autoEnable: Type.Boolean({
        default: false,
        description: 'a newly discovered accelerator is enabled at once (ready for Nova) instead of waiting inactive for an operator',
      }),
      metricsPort: Type.Integer({
        minimum: -1,
        maximum: 65535,
        default: PORTS.agentMetrics,
        description: "the agent's health + /metrics listener; 0: any free port, -1: off",
      }),
      hotplug: Type.Union([Type.Literal('udevadm'), Type.Literal('off')], {
        default: 'udevadm',
        description:
          'udevadm: kernel uevents (udevadm monitor) start a discovery at once, beside the periodic scan; off: the periodic scan alone. Without udevadm, or with only the fake driver, the periodic scan alone',
      }),
      libvirtStateDir: Type.String({
        maxLength: 4096,
        default: '/run/libvirt/qemu',
        description:
          "libvirt's live domain files: attach handles that running guests hold and no record holds (a host that ran OpenStack Cyborg before) are adopted for their instances; empty: none looked at",
      }),
      udevadmCommand: Type.String({
        minLength: 1,
        default: 'udevadm',
        description:
          'argv of udevadm (space-separated; e.g. "nsenter -t 1 -n udevadm" in a container); "monitor --kernel --property --subsystem-match=…" is appended',
      }),
    },
    { default: {} },
  ),
  conductor: Type.Object(
    {
      metricsPort: Type.Integer({
        minimum: -1,
        maximum: 65535,
        default: PORTS.conductorMetrics,
        description: "the conductor's health + /metrics listener; 0: any free port, -1: off",
      }),
      metricsConsumerLabels: Type.Boolean({
        default: false,
        description:
          '/metrics labels each allocation with its instance and project (cyborg_accelerator_allocation); off: only per-device counts, since /metrics answers without a token',
      }),
      usageWindow: Type.Integer({
        minimum: 0,
        maximum: 10_000,
        default: 60,
        description:
          "usage samples kept per accelerator, in memory only (about 28 bytes each; 60 is five minutes at the agents' 5 s telemetry); 0: telemetry is not kept",
      }),
    },
    { default: {} },
  ),
  /** The generic driver (docs/generic-driver.md): PCI accelerators from sysfs, beside the fake driver. */
  generic: Type.Object(
    {
      enabled: Type.Boolean({ default: false }),
      sysfsRoot: Type.String({ minLength: 1, default: '/sys', description: 'where sysfs is mounted (a fixture tree for demos)' }),
      passthroughWhitelist: Type.String({ default: '', description: 'Nova-style [pci] passthrough_whitelist JSON; empty: built-in defaults' }),
      hostOps: Type.Union([Type.Literal('sysfs'), Type.Literal('command'), Type.Literal('simulate')], { default: 'sysfs' }),
      helper: Type.String({ default: '', description: 'command mode: the helper every host operation is handed to (argv, space-separated)' }),
      installCommand: Type.String({ default: '', description: 'sysfs mode: run on install-driver ({version} is filled in)' }),
      uninstallCommand: Type.String({ default: '' }),
      updateCommand: Type.String({ default: '' }),
      programCommand: Type.String({ default: '', description: 'sysfs mode: programs a card ({address}, {image})' }),
      vfioDriver: Type.String({ minLength: 1, default: 'vfio-pci' }),
      version: Type.String({ minLength: 1, default: '1.0.0' }),
    },
    { default: {} },
  ),
  /** The NVIDIA driver (Cyborg's `[gpu_devices]` and its `[vgpu_<type>]` sections; docs/drivers.md). */
  gpu: Type.Object(
    {
      enabledVgpuTypes: Type.Array(Type.String({ minLength: 1 }), {
        default: [],
        description: 'mdev types (nvidia-35, …) offered as vGPUs; each needs a [vgpu_<type>] section naming its GPUs',
      }),
      /** `[vgpu_<type>] device_addresses`, by type: read from the dynamic sections, not from one option. */
      vgpuDeviceAddresses: Type.Record(Type.String(), Type.Array(Type.String({ minLength: 1 })), {
        default: {},
        description: 'the GPUs (PCI addresses) that offer this vGPU type; one type per GPU',
      }),
      filterSriovVfs: Type.Boolean({ default: false, description: 'SR-IOV virtual functions of a GPU are not reported as pGPUs' }),
      nvidiaSmi: Type.String({ default: '', description: 'argv of nvidia-smi (space-separated) for MIG; empty: MIG is not looked at' }),
      commandTimeoutMs: Type.Integer({ minimum: 1, default: 30_000, description: 'deadline of each nvidia-smi call' }),
      xidFatal: Type.Array(Type.String({ pattern: '^[0-9]{1,4}$' }), {
        default: [],
        description: 'Xid codes that quarantine a GPU at once until it is reset; empty: the built-in list (docs/drivers.md, Xid events)',
      }),
      xidTransient: Type.Array(Type.String({ pattern: '^[0-9]{1,4}$' }), {
        default: [],
        description: 'Xid codes that degrade a GPU and count towards quarantine; a code named here leaves the built-in lists',
      }),
      xidIgnored: Type.Array(Type.String({ pattern: '^[0-9]{1,4}$' }), {
        default: [],
        description:
          'Xid codes logged but not counted (the application-level 13, 31, 43, 45 and the informational 63 by default); a code named here leaves the built-in lists',
      }),
      xidCommand: Type.String({
        default: '',
        description:
          'argv (space-separated) of a command that follows the kernel log, whose NVIDIA Xid lines are health events reported at once (e.g. "dmesg --follow-new" or "journalctl -k -f -n 0 -o cat"); empty: Xid events are not watched',
      }),
      migHostAttach: Type.Boolean({
        default: false,
        description:
          "a MIG deployable is attached as its GPU instance, for consumers on the host itself; off: its bind makes the profile's MIG-backed vGPU (an mdev on a VF) for a VM",
      }),
      pciIds: Type.String({
        default: '/usr/share/misc/pci.ids',
        description: 'the pci.ids file whose names are the GPUs\' model when nvidia-smi does not say; missing: "miss model info", as Cyborg',
      }),
      legacyTraits: Type.Boolean({
        default: false,
        description:
          'also report the traits Cyborg up to 10.0.0 gave NVIDIA GPUs (CUSTOM_GPU_NVIDIA, CUSTOM_GPU_PRODUCT_ID_<PID>), so that device profiles written for it keep matching',
      }),
    },
    { default: {} },
  ),
  /** The FPGA drivers' programming tools (docs/drivers.md). */
  fpga: Type.Object(
    {
      programCommand: Type.String({
        default: '',
        description: 'argv template (space-separated) with {address} {bus} {device} {function} {image}; empty: fpgaconf for Intel, xbmgmt program for Xilinx',
      }),
      programTimeoutMs: Type.Integer({ minimum: 1, default: 600_000, description: 'deadline of one programming' }),
      intelKnownIds: Type.Array(PCI_ID, {
        default: ['8086:09c4'],
        description: 'vendor:product of the Intel FPGA PFs the intel_fpga_driver reports (PAC Arria 10 GX by default; 8086:0b2b for a PAC D5005)',
      }),
    },
    { default: {} },
  ),
  /** The NIC driver (Cyborg's `[nic_devices]` and a section per NIC type; docs/drivers.md). */
  nic: Type.Object(
    {
      enabledNicTypes: Type.Array(Type.String({ minLength: 1 }), {
        default: [],
        description: 'NIC types whose [<type>] section maps physical networks and functions onto interfaces',
      }),
      /** The `[<nic type>]` sections, by type: read from the dynamic sections, not from one option. */
      types: Type.Record(
        Type.String(),
        Type.Object({
          physicalDeviceMappings: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
          functionDeviceMappings: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
        }),
        { default: {} },
      ),
      knownIds: Type.Array(PCI_ID, {
        default: ['8086:158b', '8086:1572'],
        description: 'vendor:product of the NIC PFs the intel_nic_driver reports (X710 / XXV710 by default; 8086:1593 for an E810-C)',
      }),
    },
    { default: {} },
  ),
  /** The QAT driver (ours: Cyborg's has no settings). */
  qat: Type.Object(
    {
      knownIds: Type.Array(PCI_ID, {
        default: ['8086:37c8'],
        description: 'vendor:product of the QAT PFs the intel_qat_driver reports (C62x by default; 8086:4940 for a QAT 4xxx)',
      }),
    },
    { default: {} },
  ),
  /** The fake driver (the all-in-one's, and any agent that enables fake_driver). */
  fake: Type.Object({
    gpus: Type.Integer({ minimum: 0, default: 2 }),
    nics: Type.Integer({ minimum: 0, default: 1 }),
    vfsPerNic: Type.Integer({ minimum: 0, default: 4 }),
    opDelayMs: Type.Integer({ minimum: 0, default: 0 }),
  }),
  timing: Type.Object({
    driverOpTimeoutMs: Type.Integer({ minimum: 1, default: 30_000 }),
    programTimeoutMs: Type.Integer({
      minimum: 1,
      default: 1_800_000,
      description:
        "deadline of an FPGA programming as the conductor waits for it (the agent's download from Glance, the checksum, the tool and a rollback); a bind that programs fails with it",
    }),
    heartbeatIntervalMs: Type.Integer({ minimum: 1, default: 5_000 }),
    staleAfterMs: Type.Integer({ minimum: 1, default: 15_000 }),
    lostAfterMs: Type.Integer({ minimum: 1, default: 60_000 }),
    discoveryIntervalMs: Type.Integer({ minimum: 1, default: 60_000 }),
    healthIntervalMs: Type.Integer({ minimum: 0, default: 10_000, description: "how often the agent checks its drivers' health; 0: never" }),
    telemetryIntervalMs: Type.Integer({
      minimum: 0,
      default: 5_000,
      description: "how often the agent sends its drivers' usage (utilisation, memory, temperature, power) to the conductor; 0: never",
    }),
    healthEnterAfter: Type.Integer({ minimum: 1, default: 3, description: 'bad checks (since last healthy) that quarantine a device' }),
    healthLeaveAfter: Type.Integer({ minimum: 1, default: 3, description: 'consecutive good checks that return a transiently faulty device' }),
    healthStableMs: Type.Integer({ minimum: 0, default: 60_000, description: 'and the time those good checks must span' }),
  }),
});

export type Config = Readonly<Static<typeof ConfigSchema>>;
export type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

/** The process this configuration is for: some defaults differ by role. */
export type Role = 'all-in-one' | 'api' | 'conductor' | 'agent';

export interface LoadOptions {
  role?: Role;
  /** `--config-file` (repeatable; later files win); else `CYBORG_CONFIG_FILE`. */
  configFiles?: readonly string[];
  /** `--config-dir` (repeatable): each one's `*.conf`, by name, after the files; else `CYBORG_CONFIG_DIR`. */
  configDirs?: readonly string[];
  /** Unknown sections and options in the file; by default written to stderr. */
  onWarning?: (message: string) => void;
  /** The flags of this command by the setting they set (`listen.port` → `--port`): an error names the flag the operator typed. */
  flags?: Readonly<Record<string, string>>;
}

type Env = Record<string, string | undefined>;
type Tree = Record<string, unknown>;

/**
 * What differs by role. The api role listens where Nova and Keystone's catalog expect Cyborg
 * (6666); the all-in-one on a port browsers open (config/ports.ts). A production agent loads
 * only the drivers it is told to: no fake accelerators land in a real inventory.
 */
const ROLE_DEFAULTS: Record<Role, Tree> = {
  'all-in-one': {},
  api: { listen: { port: PORTS.api, uiPort: PORTS.allInOne } },
  conductor: {},
  agent: { agent: { enabledDrivers: [] } },
};

/**
 * Builds the configuration from defaults, the config file, the environment and `overrides` (CLI
 * flags), in that order of precedence, fills defaults and validates it once. Throws ConfigError
 * naming the file, section and option (or variable, or flag) of every bad value.
 */
export function loadConfig(overrides: DeepPartial<Static<typeof ConfigSchema>> = {}, env: Env = process.env, opts: LoadOptions = {}): Config {
  const role = opts.role;
  const source = new Map<string, string>();
  let tree: Tree = merge(
    {
      host: hostname(),
      logPretty: Boolean(process.stdout.isTTY),
      dataDir: '.cyborg',
      listen: {},
      fake: {},
      timing: {},
    },
    role ? ROLE_DEFAULTS[role] : {},
  );
  const files = [...(opts.configFiles?.length ? opts.configFiles : env.CYBORG_CONFIG_FILE ? [env.CYBORG_CONFIG_FILE] : [])];
  const dirs = opts.configDirs?.length ? opts.configDirs : env.CYBORG_CONFIG_DIR ? [env.CYBORG_CONFIG_DIR] : [];
  files.push(...dirs.flatMap(confFilesIn));
  const warn = opts.onWarning ?? ((m: string) => process.stderr.write(`cyborg: warning: ${m}\n`));
  for (const file of files) tree = merge(tree, fromFile(readIniFile(file), file, source, warn));
  tree = merge(tree, fromEnv(env, source));
  tree = merge(tree, noteSource(overrides as Tree, opts.flags ?? {}, source));
  const withDefaults = Value.Default(ConfigSchema, tree) as Tree & { distributed: Tree; agent: Tree; conductor: Tree };
  if (!source.has('distributed.metricsPort')) {
    withDefaults.distributed.metricsPort = role === 'agent' ? withDefaults.agent.metricsPort : withDefaults.conductor.metricsPort;
    const from = source.get(role === 'agent' ? 'agent.metricsPort' : 'conductor.metricsPort');
    if (from) source.set('distributed.metricsPort', from);
  }
  const errors = [...Value.Errors(ConfigSchema, withDefaults)];
  if (errors.length > 0) {
    const seen = new Set<string>();
    const lines = errors
      .map((e) => {
        const path = e.path
          .split('/')
          .filter((p) => p && !/^\d+$/.test(p))
          .join('.');
        const oneOf = Array.isArray(e.schema.anyOf) ? ` (one of ${(e.schema.anyOf as TSchema[]).map((x) => String(x.const)).join(', ')})` : '';
        const where = source.get(path) ?? (path || 'configuration');
        const value = e.value === undefined || (e.value !== null && typeof e.value === 'object') ? '' : ` = ${shown(e.value, path)}`;
        return `${where}${value}: ${e.message}${oneOf}`;
      })
      .filter((l) => !seen.has(l) && seen.add(l));
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  const config = Value.Clean(ConfigSchema, withDefaults) as Static<typeof ConfigSchema>;
  const problems = [...checkShapes(config, source), ...checkNamedSections(config, source)];
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  const frozen = deepFreeze(config);
  SOURCES.set(frozen, source);
  return frozen;
}

/** Where each loaded configuration's settings came from, kept beside it: the frozen config stays the schema's plain data. */
const SOURCES = new WeakMap<object, ReadonlyMap<string, string>>();

/**
 * The option behind a setting as the operator gave it — `environment variable CYBORG_PORT`, `<file>
 * [api] port`, `--port` — or, for a default, its `[section] option` in the file: the name a
 * start-up error puts first, so the operator is sent to what they wrote, never to a flag they did
 * not pass.
 */
export function optionSource(config: object, path: string): string {
  const given = SOURCES.get(config)?.get(path);
  if (given) return given;
  const spec = OPTIONS.find((o) => o.path === path);
  return spec ? `[${spec.section}] ${spec.name}` : path;
}

/** The longest value an error echoes: an operator may paste a whole file into a variable. */
const SHOWN_MAX = 64;

/** A bad value as an error line shows it: quoted when it holds spaces or controls, cut when long, masked when secret. */
function shown(value: unknown, path: string): string {
  if (OPTIONS.some((o) => o.secret && path.startsWith(o.path))) return '***';
  const text = String(value);
  const cut = cutValue(text);
  return /^[\x21-\x7e]+$/.test(text) ? cut : JSON.stringify(cut);
}

/** A value an error line echoes, cut at SHOWN_MAX characters. */
export function cutValue(text: string): string {
  return text.length > SHOWN_MAX ? `${text.slice(0, SHOWN_MAX)}…` : text;
}

/** Values a schema cannot test alone: the listen address is an address or a host name; each trusted proxy parses. */
function checkShapes(c: Static<typeof ConfigSchema>, source: Map<string, string>): string[] {
  const problems: string[] = [];
  if (!isListenAddress(c.listen.address))
    problems.push(
      `${source.get('listen.address') ?? '[api] host_ip'} = ${shown(c.listen.address, 'listen.address')}: not an IP address or a host name; set one of this machine's addresses, or 0.0.0.0 for all`,
    );
  for (const p of c.v2.trustedProxies)
    if (!parseTrustedProxy(p))
      problems.push(
        `${source.get('v2.trustedProxies') ?? '[api] trusted_proxies'} = ${shown(p, 'v2.trustedProxies')}: neither an IP address, a CIDR (10.0.0.0/8) nor "loopback"`,
      );
  return problems;
}

/** The file's options as a config tree; unknown ones are named in a warning. */
function fromFile(ini: IniFile, file: string, source: Map<string, string>, warn: (m: string) => void): Tree {
  const out: Tree = {};
  for (const [section, options] of ini) {
    const known = OPTIONS.filter((o) => o.section === section);
    if (known.length === 0 && namedSection(out, section, options, file, source, warn)) continue;
    if (known.length === 0) {
      // A section Cyborg's own cyborg.conf may carry is named and passed over; any other is a
      // typo whose options would all be lost ([databse] would leave the conductor in memory).
      if (!FOREIGN_SECTIONS.has(section) && options.size > 0)
        throw new ConfigError(`invalid configuration: ${file}: unknown section [${section}]${nearest(section)}`);
      if (options.size > 0) warn(`${file}: unknown section [${section}] (ignored)`);
      continue;
    }
    for (const [name, values] of options) {
      const spec = known.find((o) => o.name === name);
      if (!spec) {
        refuseUnknownOption(
          file,
          section,
          name,
          known.map((o) => o.name),
        );
        warn(`${file} [${section}]: unknown option ${name} (ignored)`);
        continue;
      }
      // As an empty environment variable: an option written with no value keeps its default.
      if (values.every((v) => v.trim() === '')) continue;
      const where = `${file} [${section}] ${name}`;
      set(out, spec.path, parse(spec, values, where, true));
      source.set(spec.path, where);
    }
  }
  return out;
}

/**
 * Sections of OpenStack's services this implementation does not read, which a cyborg.conf
 * written for Cyborg may hold: warned about and passed over, not refused.
 */
const FOREIGN_SECTIONS = new Set([
  'cinder',
  'cors',
  'healthcheck',
  'keystone',
  'oslo_concurrency',
  'oslo_messaging_amqp',
  'oslo_messaging_kafka',
  'oslo_messaging_notifications',
  'oslo_messaging_rabbit',
  'oslo_middleware',
  'oslo_reports',
  'profiler',
  'service_user',
  'ssl',
  'cache',
  'fpga_devices',
  'qat_devices',
  'matchmaker_redis',
]);

/** ` (did you mean [x]?)` for a section a letter or two from one this loader reads. */
function nearest(section: string): string {
  const names = [...new Set(OPTIONS.map((o) => o.section))].filter((n) => !n.includes('<'));
  const best = names.map((n) => ({ n, d: distance(section.toLowerCase(), n.toLowerCase()) })).sort((a, b) => a.d - b.d)[0];
  return best && best.d <= 2 ? ` (did you mean [${best.n}]?)` : ` (sections read: ${names.join(', ')})`;
}

const NIC_TYPE_OPTIONS: Record<string, string> = { physical_device_mappings: 'physicalDeviceMappings', function_device_mappings: 'functionDeviceMappings' };

/**
 * Sections named after a value of another option, as Cyborg lays them out: `[vgpu_<type>]` for
 * each of `[gpu_devices] enabled_vgpu_types`, and `[<nic type>]` (any other section holding a
 * NIC mapping) for each of `[nic_devices] enabled_nic_types`. False when `section` is neither.
 */
function namedSection(
  out: Tree,
  section: string,
  options: Map<string, string[]>,
  file: string,
  source: Map<string, string>,
  warn: (m: string) => void,
): boolean {
  const vgpu = /^vgpu_(.+)$/.exec(section);
  const isNic = !vgpu && [...options.keys()].some((n) => n in NIC_TYPE_OPTIONS);
  if (!vgpu && !isNic) return false;
  for (const [name, values] of options) {
    const field = vgpu ? (name === 'device_addresses' ? 'device_addresses' : undefined) : NIC_TYPE_OPTIONS[name];
    if (field && values.every((v) => v.trim() === '')) continue;
    if (!field) {
      warn(`${file} [${section}]: unknown option ${name} (ignored)`);
      continue;
    }
    const keys = vgpu ? ['gpu', 'vgpuDeviceAddresses', vgpu[1]!] : ['nic', 'types', section, field];
    let t = out;
    // Defaults are not filled inside a record's values: a NIC type gets both lists here.
    for (const k of keys.slice(0, -1)) t = (t[k] ??= k === section ? { physicalDeviceMappings: [], functionDeviceMappings: [] } : {}) as Tree;
    t[keys.at(-1)!] = values
      .flatMap((v) => v.split(/[,\n]/))
      .map((x) => x.trim())
      .filter(Boolean);
    source.set(keys.join('.'), `${file} [${section}] ${name}`);
  }
  return true;
}

/** What one option cannot say alone: every enabled vGPU and NIC type has its section, and a GPU offers one vGPU type. */
function checkNamedSections(c: Static<typeof ConfigSchema>, source: Map<string, string>): string[] {
  const problems: string[] = [];
  const owner = new Map<string, string>();
  for (const t of c.gpu.enabledVgpuTypes) {
    const addresses = c.gpu.vgpuDeviceAddresses[t] ?? [];
    if (addresses.length === 0)
      problems.push(`${source.get('gpu.enabledVgpuTypes') ?? 'gpu.enabledVgpuTypes'}: vGPU type ${t} has no [vgpu_${t}] device_addresses`);
    for (const a of addresses) {
      const other = owner.get(a);
      if (other !== undefined)
        problems.push(
          `${source.get(`gpu.vgpuDeviceAddresses.${t}`) ?? `[vgpu_${t}] device_addresses`}: GPU ${a} already offers ${other} (one vGPU type per GPU)`,
        );
      owner.set(a, t);
    }
  }
  problems.push(...checkXidPolicy(c.gpu, source));
  for (const t of c.nic.enabledNicTypes) {
    if (!c.nic.types[t])
      problems.push(`${source.get('nic.enabledNicTypes') ?? 'nic.enabledNicTypes'}: NIC type ${t} has no [${t}] section with physical_device_mappings`);
  }
  return problems;
}

function fromEnv(env: Env, source: Map<string, string>): Tree {
  const out: Tree = {};
  for (const spec of OPTIONS) {
    const raw = spec.env ? env[spec.env] : undefined;
    if (raw === undefined || raw === '') continue;
    const where = `environment variable ${spec.env}`;
    set(out, spec.path, parse(spec, [raw], where, false));
    source.set(spec.path, where);
  }
  return out;
}

function parse(spec: OptionSpec, values: string[], where: string, file: boolean): unknown {
  try {
    if (file && spec.fromFile) return spec.fromFile(values.at(-1) ?? '');
    if (file && spec.multi) return values.join('\n');
    return fromText(schemaAt(ConfigSchema, spec.path)!, values, file ? spec.scale : 1);
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${where}: ${spec.secret ? 'not a valid value' : (err as Error).message}`);
  }
}

function noteSource(tree: Tree, flags: Readonly<Record<string, string>>, source: Map<string, string>, prefix = ''): Tree {
  for (const [k, v] of Object.entries(tree)) {
    if (v === undefined) continue;
    const path = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object' && !Array.isArray(v)) noteSource(v as Tree, flags, source, path);
    else source.set(path, flags[path] ?? `the command line (${path})`);
  }
  return tree;
}

function set(tree: Tree, path: string, value: unknown): void {
  const keys = path.split('.');
  let t = tree;
  for (const k of keys.slice(0, -1)) t = (t[k] ??= {}) as Tree;
  t[keys.at(-1)!] = value;
}

function defined<T extends Tree>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function merge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const b = out[k];
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' ? merge(b as Tree, defined(v as Tree)) : v;
  }
  return out;
}

function deepFreeze<T>(obj: T): T {
  if (obj && typeof obj === 'object') {
    for (const v of Object.values(obj)) deepFreeze(v);
    Object.freeze(obj);
  }
  return obj;
}
