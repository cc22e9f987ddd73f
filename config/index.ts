import { hostname } from 'node:os';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

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
 * defaults. The frozen result is passed down; nothing deeper reads `process.env`.
 */
export const ConfigSchema = Type.Object({
  host: Type.String({ minLength: 1, description: 'this agent\'s host name (compute node name)' }),
  listen: Type.Object({
    address: Type.String({ default: '127.0.0.1' }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 6666 }),
  }),
  logLevel: Type.Union([
    Type.Literal('trace'), Type.Literal('debug'), Type.Literal('info'),
    Type.Literal('warn'), Type.Literal('error'), Type.Literal('fatal'), Type.Literal('silent'),
  ], { default: 'info' }),
  logPretty: Type.Boolean(),
  dataDir: Type.String({ description: 'where the embedded database and agent cache live' }),
  databaseUrl: Type.Optional(Type.String()),
  /** The conductor's journal (see docs/persistence.md). */
  persistence: Type.Object({
    unavailableAfterMs: Type.Integer({ minimum: 1, default: 10_000, description: 'a commit waiting this long for an unreachable database is answered 503 (the change stays queued)' }),
    maxBatch: Type.Integer({ minimum: 1, default: 5_000, description: 'most commits in one group-commit flush' }),
    pool: Type.Integer({ minimum: 1, default: 4, description: 'connections to DATABASE_URL (the embedded database always uses one)' }),
    pipeline: Type.Integer({ minimum: 1, maximum: 8, default: 2, description: 'flushes open at once under load, each on its own connection (at most `pool`; the embedded database always uses 1)' }),
  }, { default: {} }),
  natsUrl: Type.Optional(Type.String()),
  placementUrl: Type.Optional(Type.String()),
  placementToken: Type.String({ default: 'admin' }),
  /** Placement sync (see docs/placement.md); runs only when `placementUrl` is set. */
  placement: Type.Object({
    timeoutMs: Type.Integer({ minimum: 1, default: 10_000, description: 'per-request timeout' }),
    resourceProviderName: Type.String({ minLength: 1, default: '{host}', description: 'Cyborg\'s resource_provider_name: the compute node provider\'s name; {host} is the agent\'s host' }),
    createRootProviders: Type.Optional(Type.Boolean({ description: 'Nova-less: create a root provider per host when none exists (default: on in all-in-one, off otherwise)' })),
    syncIntervalMs: Type.Integer({ minimum: 100, default: 60_000, description: 'full reconcile period (out-of-band changes, stale providers)' }),
    concurrency: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: 'Placement requests in flight at once (1 for a sqlite-backed Placement)' }),
    /** [placement]: with `authUrl` set, Placement is reached with Keystone tokens and found in the catalog (placementUrl, if set, overrides it). */
    ...keystoneAuthOptions,
    regionName: Type.Optional(Type.String()),
    validInterfaces: Type.Array(Type.String(), { default: ['internal', 'public'] }),
  }, { default: {} }),
  novaUrl: Type.Optional(Type.String()),
  /** [nova]: with `authUrl` set, Nova is reached with Keystone tokens (and a service token) and found in the catalog (novaUrl, if set, overrides it). */
  nova: Type.Object({
    ...keystoneAuthOptions,
    regionName: Type.Optional(Type.String()),
    validInterfaces: Type.Array(Type.String(), { default: ['internal', 'public'] }),
  }, { default: {} }),
  /** [keystone_authtoken]: validating the tokens of API requests in keystone mode (v2.authStrategy). */
  keystoneAuthtoken: Type.Object({
    ...keystoneAuthOptions,
    wwwAuthenticateUri: Type.Optional(Type.String({ description: 'sent in WWW-Authenticate on a 401; default: authUrl' })),
    tokenCacheTime: Type.Integer({ minimum: 0, default: 300, description: 'seconds a validated token is trusted before Keystone is asked again' }),
    cacheMaxEntries: Type.Integer({ minimum: 1, default: 10_000 }),
    negativeCacheTime: Type.Integer({ minimum: 0, default: 10, description: 'seconds a refused token is remembered as refused' }),
    httpConnectTimeout: Type.Integer({ minimum: 1, default: 10, description: 'seconds for one request to Keystone' }),
  }, { default: {} }),
  /** [oslo_policy] (enforce_new_defaults is v2.enforceNewDefaults). */
  osloPolicy: Type.Object({
    policyFile: Type.Optional(Type.String({ description: 'policy.yaml with rule overrides; re-read on SIGHUP' })),
    enforceScope: Type.Boolean({ default: true }),
  }, { default: {} }),
  /** Cyborg v2 API: identity, policy and the Nova notifier (see docs/api-v2.md). */
  v2: Type.Object({
    authStrategy: Type.Union([Type.Literal('noauth'), Type.Literal('keystone')], { default: 'noauth', description: 'noauth: identity headers and X-Auth-Token trusted as given; keystone: only what keystonemiddleware confirmed' }),
    serviceTokenRequired: Type.Optional(Type.Boolean({ description: 'bind/unbind/delete-by-instance need a service token; default: off in noauth, on in keystone' })),
    serviceTokenRoles: Type.Array(Type.String(), { default: ['service'] }),
    enforceNewDefaults: Type.Boolean({ default: false, description: 'oslo.policy enforce_new_defaults (Cyborg 2026.2 defaults to false)' }),
    publicEndpoint: Type.Optional(Type.String({ description: 'the URL where clients reach the API root (GET /), e.g. https://cloud.example/accelerator; links[].href are built under it; default: the request\'s scheme, host and mount' })),
    trustedProxies: Type.Array(Type.String(), { default: [], description: 'proxies (addresses, CIDRs or "loopback") whose X-Forwarded-Proto / -Host / -Prefix the API believes when it builds links' }),
    novaToken: Type.String({ default: 'admin', description: 'X-Auth-Token sent to Nova' }),
    novaRetries: Type.Integer({ minimum: 0, default: 5 }),
    novaRetryDelayMs: Type.Integer({ minimum: 1, default: 500 }),
  }, { default: {} }),
  /** Distributed roles over NATS (see docs/distributed.md). */
  distributed: Type.Object({
    subjectPrefix: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]+$', description: 'prepended to every subject; isolates deployments and tests' })),
    conductorId: Type.Optional(Type.String({ minLength: 1, description: 'this conductor\'s lease identity; default: host name + random suffix' })),
    leases: Type.Boolean({ default: true, description: 'host ownership leases in JetStream KV (off: a single conductor owns every host)' }),
    leaseTtlMs: Type.Integer({ minimum: 100, default: 10_000 }),
    leaseRenewMs: Type.Integer({ minimum: 50, default: 2_000 }),
    requestTimeoutMs: Type.Integer({ minimum: 1, default: 10_000 }),
    metricsPort: Type.Integer({ minimum: -1, maximum: 65535, default: 9180, description: 'agent / conductor health + /metrics listener; 0: any free port, -1: off' }),
  }, { default: {} }),
  /** The generic driver (docs/generic-driver.md): PCI accelerators from sysfs, beside the fake driver. */
  generic: Type.Object({
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
  }, { default: {} }),
  fake: Type.Object({
    gpus: Type.Integer({ minimum: 0, default: 2 }),
    nics: Type.Integer({ minimum: 0, default: 1 }),
    vfsPerNic: Type.Integer({ minimum: 0, default: 4 }),
    opDelayMs: Type.Integer({ minimum: 0, default: 0 }),
  }),
  timing: Type.Object({
    driverOpTimeoutMs: Type.Integer({ minimum: 1, default: 30_000 }),
    heartbeatIntervalMs: Type.Integer({ minimum: 1, default: 5_000 }),
    staleAfterMs: Type.Integer({ minimum: 1, default: 15_000 }),
    lostAfterMs: Type.Integer({ minimum: 1, default: 60_000 }),
    discoveryIntervalMs: Type.Integer({ minimum: 1, default: 60_000 }),
  }),
});

export type Config = Readonly<Static<typeof ConfigSchema>>;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  return n;
}

function defined<T extends Record<string, unknown>>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Builds the configuration from environment and overrides (CLI flags), fills defaults and
 * validates it. Throws ConfigError naming every bad field.
 */
export function loadConfig(overrides: DeepPartial<Static<typeof ConfigSchema>> = {}, env: Env = process.env): Config {
  const fromEnv = {
    host: env.CYBORG_HOST,
    listen: defined({ address: env.CYBORG_LISTEN_ADDRESS, port: int(env, 'CYBORG_PORT') }),
    logLevel: env.LOG_LEVEL,
    logPretty: env.LOG_PRETTY === undefined ? undefined : env.LOG_PRETTY === '1' || env.LOG_PRETTY === 'true',
    dataDir: env.CYBORG_DATA_DIR,
    databaseUrl: env.DATABASE_URL,
    persistence: defined({
      unavailableAfterMs: int(env, 'CYBORG_DB_UNAVAILABLE_AFTER_MS'), maxBatch: int(env, 'CYBORG_DB_MAX_BATCH'), pool: int(env, 'CYBORG_DB_POOL'),
      pipeline: int(env, 'CYBORG_DB_PIPELINE'),
    }),
    natsUrl: env.NATS_URL,
    placementUrl: env.PLACEMENT_URL,
    placementToken: env.PLACEMENT_TOKEN,
    placement: defined({
      timeoutMs: int(env, 'PLACEMENT_TIMEOUT_MS'),
      resourceProviderName: env.PLACEMENT_RESOURCE_PROVIDER_NAME,
      createRootProviders: env.PLACEMENT_CREATE_ROOT_PROVIDERS === undefined ? undefined : env.PLACEMENT_CREATE_ROOT_PROVIDERS === '1' || env.PLACEMENT_CREATE_ROOT_PROVIDERS === 'true',
      syncIntervalMs: int(env, 'PLACEMENT_SYNC_INTERVAL_MS'),
      concurrency: int(env, 'PLACEMENT_CONCURRENCY'),
      authUrl: env.PLACEMENT_AUTH_URL, username: env.PLACEMENT_USERNAME, password: env.PLACEMENT_PASSWORD, projectName: env.PLACEMENT_PROJECT_NAME, regionName: env.PLACEMENT_REGION_NAME,
    }),
    novaUrl: env.NOVA_URL,
    nova: defined({ authUrl: env.NOVA_AUTH_URL, username: env.NOVA_USERNAME, password: env.NOVA_PASSWORD, projectName: env.NOVA_PROJECT_NAME, regionName: env.NOVA_REGION_NAME }),
    keystoneAuthtoken: defined({
      authUrl: env.CYBORG_KEYSTONE_AUTH_URL, wwwAuthenticateUri: env.CYBORG_KEYSTONE_WWW_AUTHENTICATE_URI, username: env.CYBORG_KEYSTONE_USERNAME,
      password: env.CYBORG_KEYSTONE_PASSWORD, projectName: env.CYBORG_KEYSTONE_PROJECT_NAME, tokenCacheTime: int(env, 'CYBORG_KEYSTONE_TOKEN_CACHE_TIME'),
    }),
    osloPolicy: defined({
      policyFile: env.CYBORG_POLICY_FILE,
      enforceScope: env.CYBORG_ENFORCE_SCOPE === undefined ? undefined : env.CYBORG_ENFORCE_SCOPE === '1' || env.CYBORG_ENFORCE_SCOPE === 'true',
    }),
    v2: defined({
      authStrategy: env.CYBORG_AUTH_STRATEGY,
      serviceTokenRequired: env.CYBORG_SERVICE_TOKEN_REQUIRED === undefined ? undefined : env.CYBORG_SERVICE_TOKEN_REQUIRED === '1' || env.CYBORG_SERVICE_TOKEN_REQUIRED === 'true',
      serviceTokenRoles: env.CYBORG_SERVICE_TOKEN_ROLES?.split(',').map((r) => r.trim()).filter(Boolean),
      enforceNewDefaults: env.CYBORG_ENFORCE_NEW_DEFAULTS === undefined ? undefined : env.CYBORG_ENFORCE_NEW_DEFAULTS === '1' || env.CYBORG_ENFORCE_NEW_DEFAULTS === 'true',
      publicEndpoint: env.CYBORG_PUBLIC_ENDPOINT,
      trustedProxies: env.CYBORG_TRUSTED_PROXIES?.split(',').map((p) => p.trim()).filter(Boolean),
      novaToken: env.NOVA_TOKEN,
      novaRetries: int(env, 'CYBORG_NOVA_RETRIES'),
    }),
    distributed: defined({
      subjectPrefix: env.CYBORG_SUBJECT_PREFIX,
      conductorId: env.CYBORG_CONDUCTOR_ID,
      leases: env.CYBORG_LEASES === undefined ? undefined : env.CYBORG_LEASES !== '0' && env.CYBORG_LEASES !== 'false',
      leaseTtlMs: int(env, 'CYBORG_LEASE_TTL_MS'),
      leaseRenewMs: int(env, 'CYBORG_LEASE_RENEW_MS'),
      requestTimeoutMs: int(env, 'CYBORG_REQUEST_TIMEOUT_MS'),
      metricsPort: int(env, 'CYBORG_METRICS_PORT'),
    }),
    generic: defined({
      enabled: env.CYBORG_GENERIC_ENABLED === undefined ? undefined : env.CYBORG_GENERIC_ENABLED === '1' || env.CYBORG_GENERIC_ENABLED === 'true',
      sysfsRoot: env.CYBORG_GENERIC_SYSFS_ROOT, passthroughWhitelist: env.CYBORG_PCI_PASSTHROUGH_WHITELIST, hostOps: env.CYBORG_GENERIC_HOST_OPS,
      helper: env.CYBORG_GENERIC_HELPER, installCommand: env.CYBORG_GENERIC_INSTALL_COMMAND, uninstallCommand: env.CYBORG_GENERIC_UNINSTALL_COMMAND,
      updateCommand: env.CYBORG_GENERIC_UPDATE_COMMAND, programCommand: env.CYBORG_GENERIC_PROGRAM_COMMAND, vfioDriver: env.CYBORG_GENERIC_VFIO_DRIVER,
    }),
    fake: defined({
      gpus: int(env, 'CYBORG_FAKE_GPUS'), nics: int(env, 'CYBORG_FAKE_NICS'),
      vfsPerNic: int(env, 'CYBORG_FAKE_VFS_PER_NIC'), opDelayMs: int(env, 'CYBORG_FAKE_OP_DELAY_MS'),
    }),
    timing: defined({
      driverOpTimeoutMs: int(env, 'CYBORG_DRIVER_OP_TIMEOUT_MS'),
      heartbeatIntervalMs: int(env, 'CYBORG_HEARTBEAT_INTERVAL_MS'),
      staleAfterMs: int(env, 'CYBORG_STALE_AFTER_MS'),
      lostAfterMs: int(env, 'CYBORG_LOST_AFTER_MS'),
      discoveryIntervalMs: int(env, 'CYBORG_DISCOVERY_INTERVAL_MS'),
    }),
  };
  const merged = merge(merge({
    host: hostname(),
    logPretty: Boolean(process.stdout.isTTY),
    dataDir: '.cyborg',
    listen: {}, fake: {}, timing: {},
  }, defined(fromEnv)), overrides as Record<string, unknown>);
  const withDefaults = Value.Default(ConfigSchema, merged);
  const errors = [...Value.Errors(ConfigSchema, withDefaults)];
  if (errors.length > 0) {
    throw new ConfigError(`invalid configuration: ${errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}`);
  }
  return deepFreeze(Value.Clean(ConfigSchema, withDefaults) as Static<typeof ConfigSchema>);
}

export type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const b = out[k];
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object'
      ? merge(b as Record<string, unknown>, defined(v as Record<string, unknown>))
      : v;
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
