/**
 * Where each setting of the config schema can be given: its option in `cyborg.conf` (Cyborg's own
 * section and name where Cyborg has one) and its environment variable. The loader, the sample
 * (`cyborg config sample`) and the README's table are all made from this list and the schema, so
 * they cannot disagree.
 */
import { ConfigError } from './errors.js';

export interface OptionSpec {
  /** Dotted path in ConfigSchema (`listen.port`). */
  path: string;
  section: string;
  name: string;
  env?: string;
  /** The file's value is in these units of the schema's (Cyborg's seconds for our milliseconds). */
  scale?: number;
  /** A file value that means something else than the schema's value (`debug = true` → `debug`). */
  fromFile?: (raw: string) => unknown;
  /** oslo.config's MultiStrOpt: every time the option is given is kept, one per line (in the file), not only the last. */
  multi?: true;
  /** Written in the sample instead of the schema's default: a value the loader accepts. */
  sampleDefault?: string;
  /**
   * A default that is not one value (it depends on the role, the machine or the terminal), in
   * words: the README's table shows it, the sample says it in a comment and leaves the value
   * empty (an empty value leaves the option at its default).
   */
  defaultNote?: string;
  /** The file's type when `fromFile` reads something else than the schema's type. */
  type?: string;
  /** Help beside the schema's description (Cyborg's wording, a unit). */
  help?: string;
  /** Never echoed back in a warning or an error. */
  secret?: boolean;
}

/** keystoneauth's options, as the `[placement]`, `[nova]` and `[keystone_authtoken]` groups have them. */
function keystoneauth(section: string, path: string, envPrefix: string): OptionSpec[] {
  return [
    { path: `${path}.authType`, section, name: 'auth_type' },
    { path: `${path}.authUrl`, section, name: 'auth_url', env: `${envPrefix}_AUTH_URL` },
    { path: `${path}.username`, section, name: 'username', env: `${envPrefix}_USERNAME` },
    { path: `${path}.password`, section, name: 'password', env: `${envPrefix}_PASSWORD`, secret: true },
    { path: `${path}.projectName`, section, name: 'project_name', env: `${envPrefix}_PROJECT_NAME` },
    { path: `${path}.userDomainName`, section, name: 'user_domain_name' },
    { path: `${path}.projectDomainName`, section, name: 'project_domain_name' },
    { path: `${path}.applicationCredentialId`, section, name: 'application_credential_id' },
    { path: `${path}.applicationCredentialName`, section, name: 'application_credential_name' },
    { path: `${path}.applicationCredentialSecret`, section, name: 'application_credential_secret', secret: true },
  ];
}

/** The catalog lookup of a peer: which region, which interfaces. */
function catalog(section: string, path: string, envPrefix: string): OptionSpec[] {
  return [
    { path: `${path}.regionName`, section, name: 'region_name', env: `${envPrefix}_REGION_NAME` },
    { path: `${path}.validInterfaces`, section, name: 'valid_interfaces' },
  ];
}

const sqlaDriver = /^([a-z]+)\+[a-z0-9_]+:\/\//i;

export const OPTIONS: readonly OptionSpec[] = [
  // [DEFAULT]: oslo.service / oslo.messaging / oslo.log names.
  {
    path: 'host',
    section: 'DEFAULT',
    name: 'host',
    env: 'CYBORG_HOST',
    defaultNote: "the machine's host name",
    help: "must match Nova's hypervisor node name",
  },
  {
    path: 'logLevel',
    section: 'DEFAULT',
    name: 'debug',
    fromFile: (v) => (bool(v) ? 'debug' : 'info'),
    type: 'boolean value',
    sampleDefault: 'false',
    help: "oslo.log's debug: true logs at debug level, false at info (log_level below wins)",
  },
  { path: 'logLevel', section: 'DEFAULT', name: 'log_level', env: 'LOG_LEVEL', help: "pino's log level" },
  {
    path: 'logPretty',
    section: 'DEFAULT',
    name: 'log_pretty',
    env: 'LOG_PRETTY',
    defaultNote: 'on in a terminal',
    help: 'human-readable logs instead of JSON',
  },
  { path: 'dataDir', section: 'DEFAULT', name: 'state_path', env: 'CYBORG_DATA_DIR', sampleDefault: '.cyborg' },
  {
    path: 'natsUrl',
    section: 'DEFAULT',
    name: 'transport_url',
    env: 'NATS_URL',
    help: 'the message bus of the distributed roles: NATS with JetStream (nats://[user:password@]host:4222[,nats://…]; tls://… for TLS); unset: in-process bus (all-in-one only)',
    fromFile: (v) => {
      if (/^(rabbit|amqp|kafka)/i.test(v)) throw new ConfigError("this Cyborg speaks NATS, not oslo.messaging's AMQP: give nats://host:4222");
      return v;
    },
  },
  {
    path: 'timing.discoveryIntervalMs',
    section: 'DEFAULT',
    name: 'periodic_interval',
    scale: 1000,
    env: 'CYBORG_DISCOVERY_INTERVAL_MS',
    help: 'seconds in the file; milliseconds in the environment',
  },
  { path: 'v2.authStrategy', section: 'DEFAULT', name: 'auth_strategy', env: 'CYBORG_AUTH_STRATEGY' },
  // [api]
  { path: 'listen.address', section: 'api', name: 'host_ip', env: 'CYBORG_LISTEN_ADDRESS' },
  { path: 'listen.port', section: 'api', name: 'port', env: 'CYBORG_PORT', defaultNote: '6680 (the api role: 6666)' },
  {
    path: 'listen.uiPort',
    section: 'api',
    name: 'ui_port',
    env: 'CYBORG_UI_PORT',
    help: "browsers refuse Cyborg's 6666: the api role's visualizer is opened here (6681, say), off unless set",
  },
  { path: 'v2.publicEndpoint', section: 'api', name: 'public_endpoint', env: 'CYBORG_PUBLIC_ENDPOINT' },
  { path: 'v2.trustedProxies', section: 'api', name: 'trusted_proxies', env: 'CYBORG_TRUSTED_PROXIES' },
  { path: 'api.sseMaxClients', section: 'api', name: 'sse_max_clients', env: 'CYBORG_SSE_MAX_CLIENTS' },
  { path: 'api.sseBufferBytes', section: 'api', name: 'sse_buffer_bytes', env: 'CYBORG_SSE_BUFFER_BYTES' },
  { path: 'api.pageMax', section: 'api', name: 'max_limit', env: 'CYBORG_PAGE_MAX' },
  { path: 'api.maxArqsPerRequest', section: 'api', name: 'max_arqs_per_request', env: 'CYBORG_MAX_ARQS_PER_REQUEST' },
  { path: 'api.operatorRateLimit', section: 'api', name: 'operator_rate_limit', env: 'CYBORG_OPERATOR_RATE_LIMIT' },
  // [database]: oslo.db names.
  {
    path: 'databaseUrl',
    section: 'database',
    name: 'connection',
    env: 'DATABASE_URL',
    secret: true,
    help: 'PostgreSQL (postgresql://user:password@host/cyborg; a SQLAlchemy +driver suffix is dropped); unset: embedded PGlite in the all-in-one, and a conductor refuses to start; memory:// (by name only): a conductor keeping its state in memory, for a demo',
    fromFile: (v) => {
      if (v.trim() === 'memory://') return 'memory://';
      const url = v.replace(sqlaDriver, '$1://');
      if (!/^postgres(ql)?:\/\//i.test(url)) throw new ConfigError('only PostgreSQL is supported (postgresql://…)');
      return url;
    },
  },
  { path: 'persistence.pool', section: 'database', name: 'max_pool_size', env: 'CYBORG_DB_POOL' },
  { path: 'persistence.unavailableAfterMs', section: 'database', name: 'unavailable_after_ms', env: 'CYBORG_DB_UNAVAILABLE_AFTER_MS' },
  { path: 'persistence.maxBatch', section: 'database', name: 'max_batch', env: 'CYBORG_DB_MAX_BATCH' },
  { path: 'persistence.pipeline', section: 'database', name: 'pipeline', env: 'CYBORG_DB_PIPELINE' },
  { path: 'persistence.preparedStatements', section: 'database', name: 'prepared_statements', env: 'CYBORG_DB_PREPARED_STATEMENTS' },
  // [audit]: the transition log's retention.
  {
    path: 'persistence.auditMaxAgeMs',
    section: 'audit',
    name: 'max_age',
    scale: 1000,
    env: 'CYBORG_AUDIT_MAX_AGE_MS',
    help: 'seconds in the file; milliseconds in the environment',
  },
  { path: 'persistence.auditMaxRows', section: 'audit', name: 'max_rows', env: 'CYBORG_AUDIT_MAX_ROWS' },
  {
    path: 'persistence.auditPruneIntervalMs',
    section: 'audit',
    name: 'prune_interval',
    scale: 1000,
    env: 'CYBORG_AUDIT_PRUNE_INTERVAL_MS',
    help: 'seconds in the file; milliseconds in the environment',
  },
  // [agent]
  { path: 'agent.enabledDrivers', section: 'agent', name: 'enabled_drivers', env: 'CYBORG_ENABLED_DRIVERS', defaultNote: 'fake_driver (the agent role: none)' },
  { path: 'agent.autoEnable', section: 'agent', name: 'auto_enable', env: 'CYBORG_AUTO_ENABLE' },
  { path: 'agent.metricsPort', section: 'agent', name: 'metrics_port' },
  { path: 'agent.hotplug', section: 'agent', name: 'hotplug', env: 'CYBORG_HOTPLUG' },
  { path: 'agent.udevadmCommand', section: 'agent', name: 'udevadm_command', env: 'CYBORG_UDEVADM_COMMAND' },
  { path: 'agent.libvirtStateDir', section: 'agent', name: 'libvirt_state_dir', env: 'CYBORG_LIBVIRT_STATE_DIR' },
  { path: 'placement.resourceProviderName', section: 'agent', name: 'resource_provider_name', env: 'PLACEMENT_RESOURCE_PROVIDER_NAME' },
  { path: 'timing.heartbeatIntervalMs', section: 'agent', name: 'heartbeat_interval_ms', env: 'CYBORG_HEARTBEAT_INTERVAL_MS' },
  { path: 'timing.healthIntervalMs', section: 'agent', name: 'health_interval_ms', env: 'CYBORG_HEALTH_INTERVAL_MS' },
  { path: 'timing.telemetryIntervalMs', section: 'agent', name: 'telemetry_interval_ms', env: 'CYBORG_TELEMETRY_INTERVAL_MS' },
  {
    path: 'timing.driverOpTimeoutMs',
    section: 'agent',
    name: 'driver_op_timeout_ms',
    env: 'CYBORG_DRIVER_OP_TIMEOUT_MS',
    help: 'a command not answered is re-sent with the same idempotency key every third of it, at most every 5 s',
  },
  // [conductor]
  {
    path: 'timing.programTimeoutMs',
    section: 'conductor',
    name: 'program_timeout',
    scale: 1000,
    env: 'CYBORG_PROGRAM_TIMEOUT_MS',
    help: 'seconds in the file; milliseconds in the environment',
  },
  { path: 'timing.healthEnterAfter', section: 'conductor', name: 'health_enter_after', env: 'CYBORG_HEALTH_ENTER_AFTER' },
  { path: 'timing.healthLeaveAfter', section: 'conductor', name: 'health_leave_after', env: 'CYBORG_HEALTH_LEAVE_AFTER' },
  { path: 'timing.healthStableMs', section: 'conductor', name: 'health_stable_ms', env: 'CYBORG_HEALTH_STABLE_MS' },
  { path: 'conductor.metricsPort', section: 'conductor', name: 'metrics_port' },
  { path: 'conductor.metricsConsumerLabels', section: 'conductor', name: 'metrics_consumer_labels', env: 'CYBORG_METRICS_CONSUMER_LABELS' },
  { path: 'conductor.usageWindow', section: 'conductor', name: 'usage_window', env: 'CYBORG_USAGE_WINDOW' },
  { path: 'distributed.conductorId', section: 'conductor', name: 'conductor_id', env: 'CYBORG_CONDUCTOR_ID' },
  { path: 'distributed.leases', section: 'conductor', name: 'leases', env: 'CYBORG_LEASES' },
  { path: 'distributed.leaseTtlMs', section: 'conductor', name: 'lease_ttl_ms', env: 'CYBORG_LEASE_TTL_MS' },
  { path: 'distributed.leaseRenewMs', section: 'conductor', name: 'lease_renew_ms', env: 'CYBORG_LEASE_RENEW_MS' },
  { path: 'timing.staleAfterMs', section: 'conductor', name: 'stale_after_ms', env: 'CYBORG_STALE_AFTER_MS' },
  { path: 'timing.lostAfterMs', section: 'conductor', name: 'lost_after_ms', env: 'CYBORG_LOST_AFTER_MS' },
  // [nats]: the bus between roles.
  { path: 'distributed.subjectPrefix', section: 'nats', name: 'subject_prefix', env: 'CYBORG_SUBJECT_PREFIX' },
  { path: 'distributed.requestTimeoutMs', section: 'nats', name: 'request_timeout_ms', env: 'CYBORG_REQUEST_TIMEOUT_MS' },
  { path: 'distributed.viewCheckMs', section: 'nats', name: 'view_check_ms', env: 'CYBORG_VIEW_CHECK_MS' },
  // [upgrade_levels]: Nova's name for the pins of a rolling upgrade (docs/upgrade.md).
  { path: 'distributed.protocolPin', section: 'upgrade_levels', name: 'protocol', env: 'CYBORG_UPGRADE_LEVELS_PROTOCOL' },
  { path: 'distributed.protocolPeerWindowMs', section: 'upgrade_levels', name: 'peer_window_ms', env: 'CYBORG_PROTOCOL_PEER_WINDOW_MS' },
  { path: 'nats.user', section: 'nats', name: 'user', env: 'NATS_USER' },
  { path: 'nats.password', section: 'nats', name: 'password', env: 'NATS_PASSWORD', secret: true },
  { path: 'nats.token', section: 'nats', name: 'token', env: 'NATS_TOKEN', secret: true },
  { path: 'nats.nkeySeedFile', section: 'nats', name: 'nkey_seed_file', env: 'NATS_NKEY_SEED_FILE' },
  { path: 'nats.credsFile', section: 'nats', name: 'creds_file', env: 'NATS_CREDS_FILE' },
  { path: 'nats.tlsCaFile', section: 'nats', name: 'tls_ca_file', env: 'NATS_TLS_CA_FILE' },
  { path: 'nats.tlsCertFile', section: 'nats', name: 'tls_cert_file', env: 'NATS_TLS_CERT_FILE' },
  { path: 'nats.tlsKeyFile', section: 'nats', name: 'tls_key_file', env: 'NATS_TLS_KEY_FILE' },
  {
    path: 'distributed.metricsPort',
    section: 'nats',
    name: 'metrics_port',
    env: 'CYBORG_METRICS_PORT',
    defaultNote: '[conductor] / [agent] metrics_port',
  },
  // [placement]: keystoneauth's group, and the sync's own settings.
  { path: 'placementUrl', section: 'placement', name: 'endpoint_override', env: 'PLACEMENT_URL' },
  { path: 'placementToken', section: 'placement', name: 'token', env: 'PLACEMENT_TOKEN', secret: true },
  {
    path: 'placement.timeoutMs',
    section: 'placement',
    name: 'timeout',
    scale: 1000,
    env: 'PLACEMENT_TIMEOUT_MS',
    help: 'seconds in the file; milliseconds in the environment',
  },
  { path: 'placement.createRootProviders', section: 'placement', name: 'create_root_providers', env: 'PLACEMENT_CREATE_ROOT_PROVIDERS' },
  { path: 'placement.syncIntervalMs', section: 'placement', name: 'sync_interval_ms', env: 'PLACEMENT_SYNC_INTERVAL_MS' },
  { path: 'placement.concurrency', section: 'placement', name: 'concurrency', env: 'PLACEMENT_CONCURRENCY' },
  ...keystoneauth('placement', 'placement', 'PLACEMENT'),
  ...catalog('placement', 'placement', 'PLACEMENT'),
  // [nova]
  { path: 'novaUrl', section: 'nova', name: 'endpoint_override', env: 'NOVA_URL' },
  { path: 'v2.novaToken', section: 'nova', name: 'token', env: 'NOVA_TOKEN', secret: true },
  { path: 'v2.novaRetries', section: 'nova', name: 'retries', env: 'CYBORG_NOVA_RETRIES' },
  { path: 'v2.novaRetryDelayMs', section: 'nova', name: 'retry_delay_ms' },
  ...keystoneauth('nova', 'nova', 'NOVA'),
  ...catalog('nova', 'nova', 'NOVA'),
  // [glance]: FPGA bitstreams programmed on bind (agents fetch them).
  { path: 'glance.endpointOverride', section: 'glance', name: 'endpoint_override', env: 'GLANCE_URL' },
  {
    path: 'glance.timeoutMs',
    section: 'glance',
    name: 'timeout',
    scale: 1000,
    env: 'GLANCE_TIMEOUT_MS',
    help: 'seconds in the file; milliseconds in the environment',
  },
  { path: 'glance.maxImageBytes', section: 'glance', name: 'max_image_bytes', env: 'GLANCE_MAX_IMAGE_BYTES' },
  { path: 'glance.downloadDir', section: 'glance', name: 'download_dir', env: 'GLANCE_DOWNLOAD_DIR' },
  { path: 'glance.numRetries', section: 'glance', name: 'num_retries', env: 'GLANCE_NUM_RETRIES' },
  ...keystoneauth('glance', 'glance', 'GLANCE'),
  ...catalog('glance', 'glance', 'GLANCE'),
  // [keystone_authtoken]: keystonemiddleware's.
  ...keystoneauth('keystone_authtoken', 'keystoneAuthtoken', 'CYBORG_KEYSTONE'),
  { path: 'keystoneAuthtoken.wwwAuthenticateUri', section: 'keystone_authtoken', name: 'www_authenticate_uri', env: 'CYBORG_KEYSTONE_WWW_AUTHENTICATE_URI' },
  { path: 'keystoneAuthtoken.tokenCacheTime', section: 'keystone_authtoken', name: 'token_cache_time', env: 'CYBORG_KEYSTONE_TOKEN_CACHE_TIME' },
  { path: 'keystoneAuthtoken.httpConnectTimeout', section: 'keystone_authtoken', name: 'http_connect_timeout' },
  { path: 'keystoneAuthtoken.cacheMaxEntries', section: 'keystone_authtoken', name: 'cache_max_entries' },
  { path: 'keystoneAuthtoken.negativeCacheTime', section: 'keystone_authtoken', name: 'negative_cache_time' },
  { path: 'v2.serviceTokenRoles', section: 'keystone_authtoken', name: 'service_token_roles', env: 'CYBORG_SERVICE_TOKEN_ROLES' },
  { path: 'v2.serviceTokenRequired', section: 'keystone_authtoken', name: 'service_token_roles_required', env: 'CYBORG_SERVICE_TOKEN_REQUIRED' },
  // [oslo_policy]
  { path: 'osloPolicy.policyFile', section: 'oslo_policy', name: 'policy_file', env: 'CYBORG_POLICY_FILE' },
  { path: 'v2.enforceNewDefaults', section: 'oslo_policy', name: 'enforce_new_defaults', env: 'CYBORG_ENFORCE_NEW_DEFAULTS' },
  { path: 'osloPolicy.enforceScope', section: 'oslo_policy', name: 'enforce_scope', env: 'CYBORG_ENFORCE_SCOPE' },
  // [pci]: Nova's and Cyborg's allow-list.
  { path: 'generic.passthroughWhitelist', section: 'pci', name: 'passthrough_whitelist', env: 'CYBORG_PCI_PASSTHROUGH_WHITELIST', multi: true },
  // [generic_driver]: the PCI driver of this project (docs/generic-driver.md).
  {
    path: 'generic.enabled',
    section: 'generic_driver',
    name: 'enabled',
    env: 'CYBORG_GENERIC_ENABLED',
    help: 'the same as naming generic_driver in [agent] enabled_drivers',
  },
  { path: 'generic.sysfsRoot', section: 'generic_driver', name: 'sysfs_root', env: 'CYBORG_GENERIC_SYSFS_ROOT' },
  { path: 'generic.hostOps', section: 'generic_driver', name: 'host_ops', env: 'CYBORG_GENERIC_HOST_OPS' },
  { path: 'generic.helper', section: 'generic_driver', name: 'helper', env: 'CYBORG_GENERIC_HELPER' },
  { path: 'generic.installCommand', section: 'generic_driver', name: 'install_command', env: 'CYBORG_GENERIC_INSTALL_COMMAND' },
  { path: 'generic.uninstallCommand', section: 'generic_driver', name: 'uninstall_command', env: 'CYBORG_GENERIC_UNINSTALL_COMMAND' },
  { path: 'generic.updateCommand', section: 'generic_driver', name: 'update_command', env: 'CYBORG_GENERIC_UPDATE_COMMAND' },
  { path: 'generic.programCommand', section: 'generic_driver', name: 'program_command', env: 'CYBORG_GENERIC_PROGRAM_COMMAND' },
  { path: 'generic.vfioDriver', section: 'generic_driver', name: 'vfio_driver', env: 'CYBORG_GENERIC_VFIO_DRIVER' },
  { path: 'generic.version', section: 'generic_driver', name: 'version' },
  // [gpu_devices] and its [vgpu_<type>] sections: the NVIDIA driver, with Cyborg's names (docs/drivers.md).
  { path: 'gpu.enabledVgpuTypes', section: 'gpu_devices', name: 'enabled_vgpu_types', env: 'CYBORG_ENABLED_VGPU_TYPES' },
  { path: 'gpu.filterSriovVfs', section: 'gpu_devices', name: 'filter_sriov_vfs', env: 'CYBORG_GPU_FILTER_SRIOV_VFS' },
  { path: 'gpu.nvidiaSmi', section: 'gpu_devices', name: 'nvidia_smi', env: 'CYBORG_NVIDIA_SMI' },
  { path: 'gpu.xidCommand', section: 'gpu_devices', name: 'xid_command', env: 'CYBORG_GPU_XID_COMMAND' },
  { path: 'gpu.xidFatal', section: 'gpu_devices', name: 'xid_fatal', env: 'CYBORG_GPU_XID_FATAL' },
  { path: 'gpu.xidTransient', section: 'gpu_devices', name: 'xid_transient', env: 'CYBORG_GPU_XID_TRANSIENT' },
  { path: 'gpu.xidIgnored', section: 'gpu_devices', name: 'xid_ignored', env: 'CYBORG_GPU_XID_IGNORED' },
  {
    path: 'gpu.commandTimeoutMs',
    section: 'gpu_devices',
    name: 'command_timeout',
    scale: 1000,
    env: 'CYBORG_GPU_COMMAND_TIMEOUT_MS',
    help: 'seconds in the file; milliseconds in the environment',
  },
  { path: 'gpu.migHostAttach', section: 'gpu_devices', name: 'mig_host_attach', env: 'CYBORG_GPU_MIG_HOST_ATTACH' },
  { path: 'gpu.pciIds', section: 'gpu_devices', name: 'pci_ids', env: 'CYBORG_GPU_PCI_IDS' },
  { path: 'gpu.legacyTraits', section: 'gpu_devices', name: 'legacy_traits', env: 'CYBORG_GPU_LEGACY_TRAITS' },
  {
    path: 'gpu.vgpuDeviceAddresses',
    section: 'vgpu_<type>',
    name: 'device_addresses',
    type: 'list value',
    help: 'one section per type of [gpu_devices] enabled_vgpu_types ([vgpu_nvidia-35]): the PCI addresses of the GPUs that offer it; one type per GPU',
  },
  // [fpga]: the FPGA drivers' programming tool.
  { path: 'fpga.programCommand', section: 'fpga', name: 'program_command', env: 'CYBORG_FPGA_PROGRAM_COMMAND' },
  {
    path: 'fpga.programTimeoutMs',
    section: 'fpga',
    name: 'program_timeout',
    scale: 1000,
    env: 'CYBORG_FPGA_PROGRAM_TIMEOUT_MS',
    help: 'seconds in the file; milliseconds in the environment',
  },
  { path: 'fpga.intelKnownIds', section: 'fpga', name: 'intel_known_ids', env: 'CYBORG_FPGA_INTEL_KNOWN_IDS' },
  // [nic_devices] and a section per NIC type: the NIC driver, with Cyborg's names.
  { path: 'nic.enabledNicTypes', section: 'nic_devices', name: 'enabled_nic_types', env: 'CYBORG_ENABLED_NIC_TYPES' },
  {
    path: 'nic.types',
    section: '<nic type>',
    name: 'physical_device_mappings',
    type: 'list value',
    help: "one section per type of [nic_devices] enabled_nic_types ([x710_static]): physnet:ifname|ifname, by the PF's interface name; physical_network of the attach info",
  },
  {
    path: 'nic.types',
    section: '<nic type>',
    name: 'function_device_mappings',
    type: 'list value',
    help: 'FUNCTION:ifname|ifname (GTPV1:ens1f0): the CUSTOM_<FUNCTION> trait of those ports',
  },
  { path: 'nic.knownIds', section: 'nic_devices', name: 'known_ids', env: 'CYBORG_NIC_KNOWN_IDS' },
  // [qat_devices]: the QAT driver's known PFs (ours).
  { path: 'qat.knownIds', section: 'qat_devices', name: 'known_ids', env: 'CYBORG_QAT_KNOWN_IDS' },
  // [fake_driver]: the committed fake (demos, tests, simulations).
  { path: 'fake.gpus', section: 'fake_driver', name: 'gpus', env: 'CYBORG_FAKE_GPUS' },
  { path: 'fake.nics', section: 'fake_driver', name: 'nics', env: 'CYBORG_FAKE_NICS' },
  { path: 'fake.vfsPerNic', section: 'fake_driver', name: 'vfs_per_nic', env: 'CYBORG_FAKE_VFS_PER_NIC' },
  { path: 'fake.opDelayMs', section: 'fake_driver', name: 'op_delay_ms', env: 'CYBORG_FAKE_OP_DELAY_MS' },
];

/** oslo.config's booleans (and the environment's 1 / 0). */
export function bool(raw: string): boolean {
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off', ''].includes(v)) return false;
  throw new ConfigError(`"${raw}" is not a boolean (true / false)`);
}
