import { Type, type Static } from '@sinclair/typebox';
import { PORTS } from './ports.js';
import { PROTOCOL } from '../release/index.js';
import { agentSchema, fakeSchema, fpgaSchema, genericSchema, gpuSchema, nicSchema, qatSchema } from './schema-drivers.js';
import { glanceSchema, keystoneAuthtokenSchema, natsSchema, novaSchema, osloPolicySchema, placementSchema } from './schema-openstack.js';

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
  nats: natsSchema,
  placementUrl: Type.Optional(Type.String({ pattern: '^https?://', description: "Placement's endpoint; unset: no sync (said once in the log)" })),
  placementToken: Type.String({ default: 'admin' }),
  placement: placementSchema,
  novaUrl: Type.Optional(
    Type.String({ pattern: '^https?://', description: "Nova's compute endpoint for accelerator-request-bound events; unset: none sent (said once)" }),
  ),
  nova: novaSchema,
  glance: glanceSchema,
  keystoneAuthtoken: keystoneAuthtokenSchema,
  osloPolicy: osloPolicySchema,
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
      protocolPin: Type.Optional(
        Type.Integer({
          minimum: PROTOCOL.previous,
          maximum: PROTOCOL.current,
          description: `the control protocol this role speaks whatever its peers announce (Nova's [upgrade_levels]); unset: auto, the older one (${PROTOCOL.previous}) while a peer of it is heard, else ${PROTOCOL.current} (docs/upgrade.md)`,
        }),
      ),
      protocolPeerWindowMs: Type.Integer({
        minimum: 100,
        maximum: 3_600_000,
        default: 30_000,
        description:
          'a peer of the older protocol keeps this role speaking it this long after it was last heard (and a starting role listens this long before it speaks up)',
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
  agent: agentSchema,
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
          '/metrics labels each allocation with its instance and project (cyborg_accelerator_allocation; project_name too in keystone mode); off: only per-device counts, since /metrics answers without a token',
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
  generic: genericSchema,
  gpu: gpuSchema,
  fpga: fpgaSchema,
  nic: nicSchema,
  qat: qatSchema,
  fake: fakeSchema,
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
