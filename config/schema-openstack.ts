import { Type } from '@sinclair/typebox';

/**
 * The sections of the schema that reach OpenStack's services and the bus: NATS, Placement, Nova,
 * Glance, Keystone's token validation and oslo.policy. Assembled into ConfigSchema by schema.ts.
 */

/** keystoneauth's options, as the `[placement]`, `[nova]`, `[glance]` and `[keystone_authtoken]` groups have them. */
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

/** How the distributed roles authenticate to NATS (docs/distributed.md, "An authenticated bus"): one method, and TLS files. */
export const natsSchema = Type.Object(
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
);

/** Placement sync (see docs/placement.md); runs only when `placementUrl` is set. */
export const placementSchema = Type.Object(
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
);

/** [nova]: with `authUrl` set, Nova is reached with Keystone tokens (and a service token) and found in the catalog (novaUrl, if set, overrides it). */
export const novaSchema = Type.Object(
  {
    ...keystoneAuthOptions,
    regionName: Type.Optional(Type.String()),
    validInterfaces: Type.Array(Type.String(), { default: ['internal', 'public'] }),
  },
  { default: {} },
);

/**
 * [glance]: where agents fetch the FPGA bitstreams a device profile names (`accel:bitstream_id`,
 * `accel:function_id`). With `authUrl`, Glance is found in the catalog with the service user's
 * token; `endpointOverride` names it directly (without `authUrl`: no token, for a private one).
 */
export const glanceSchema = Type.Object(
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
);

/** [keystone_authtoken]: validating the tokens of API requests in keystone mode (v2.authStrategy). */
export const keystoneAuthtokenSchema = Type.Object(
  {
    ...keystoneAuthOptions,
    wwwAuthenticateUri: Type.Optional(Type.String({ description: 'sent in WWW-Authenticate on a 401; default: authUrl' })),
    tokenCacheTime: Type.Integer({ minimum: 0, default: 300, description: 'seconds a validated token is trusted before Keystone is asked again' }),
    cacheMaxEntries: Type.Integer({ minimum: 1, default: 10_000 }),
    negativeCacheTime: Type.Integer({ minimum: 0, default: 10, description: 'seconds a refused token is remembered as refused' }),
    httpConnectTimeout: Type.Integer({ minimum: 1, default: 10, description: 'seconds for one request to Keystone' }),
  },
  { default: {} },
);

/** [oslo_policy] (enforce_new_defaults is v2.enforceNewDefaults). */
export const osloPolicySchema = Type.Object(
  {
    policyFile: Type.Optional(Type.String({ description: 'policy.yaml with rule overrides; re-read on SIGHUP' })),
    enforceScope: Type.Boolean({ default: true }),
  },
  { default: {} },
);
