import type { Logger } from 'pino';
import { ConfigError, optionSource, type Config } from '../../config/index.js';
import { authMethod, KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { CYBORG_RULES, Enforcer, PolicyFileError } from '../../policy/index.js';
import type { KeystoneAuth } from './identity.js';
import { CyborgError } from '../../errors/index.js';

/** What buildApi takes besides the v2 settings: the token validator (keystone mode) and the policy. */
export interface ApiAuth {
  keystone?: KeystoneAuth;
  enforcer?: Enforcer;
}

/** Keystone mode's validator from `[keystone_authtoken]`; undefined in noauth. */
export function keystoneAuthFromConfig(config: Pick<Config, 'v2' | 'keystoneAuthtoken'>): KeystoneAuth | undefined {
  if (config.v2.authStrategy !== 'keystone') return undefined;
  const k = config.keystoneAuthtoken;
  if (!k.authUrl) throw new CyborgError('config.invalid', 'auth strategy keystone needs [keystone_authtoken] auth_url (CYBORG_KEYSTONE_AUTH_URL)');
  const timeoutMs = k.httpConnectTimeout * 1000;
  const session = new KeystoneSession({ authUrl: k.authUrl, auth: authMethod('keystone_authtoken', k), timeoutMs });
  const validator = new TokenValidator({
    session,
    timeoutMs,
    cache: { ttlMs: k.tokenCacheTime * 1000, maxEntries: k.cacheMaxEntries, negativeTtlMs: k.negativeCacheTime * 1000 },
  });
  return { validator, wwwAuthenticateUri: k.wwwAuthenticateUri ?? session.authUrl.replace(/\/v3$/, '') };
}

/**
 * The policy from `[oslo_policy]`. A policy file that is there but cannot be used (not YAML, a rule
 * that does not parse) stops the start: a ConfigError in one line naming the option as the
 * operator set it and the rule. One that is not there is not an error (oslo.policy's behaviour:
 * the defaults in code apply); `fileMissing` says so, for the caller's warning.
 */
export function loadEnforcer(config: Pick<Config, 'v2' | 'osloPolicy'>): Enforcer {
  try {
    return new Enforcer(CYBORG_RULES, {
      enforceNewDefaults: config.v2.enforceNewDefaults,
      enforceScope: config.osloPolicy.enforceScope,
      policyFile: config.osloPolicy.policyFile,
    });
  } catch (err) {
    if (!(err instanceof PolicyFileError)) throw err;
    // The YAML parser's message goes on with an excerpt of the file over several lines.
    const why = err.message.split('\n')[0]!.replace(/:$/, '');
    throw new ConfigError(
      `invalid configuration: ${optionSource(config, 'osloPolicy.policyFile')} = ${config.osloPolicy.policyFile}: ${why}; fix the file, or unset the option for the defaults in code`,
    );
  }
}

/** The warn line for a policy file that is not there: most often a misspelt path, whose rules the operator believes apply. */
function warnMissingPolicyFile(enforcer: Enforcer, log: Logger, option: string): void {
  if (!enforcer.fileMissing) return;
  log.warn(
    { policyFile: enforcer.options.policyFile, option },
    `${option} = ${enforcer.options.policyFile}: no such file; the policy defaults in code apply (fix the path, or unset the option)`,
  );
}

/** SIGHUP re-reads the policy file; a bad one is logged and the rules in force stay. Returns the unsubscribe. */
export function watchPolicyReload(enforcer: Enforcer, log: Logger, option = '[oslo_policy] policy_file'): () => void {
  const onHup = (): void => {
    const err = enforcer.reload();
    if (err) log.error({ err, rule: err.rule, policyFile: enforcer.options.policyFile }, 'policy file not reloaded: the rules in force stay');
    else {
      warnMissingPolicyFile(enforcer, log, option);
      log.info({ policyFile: enforcer.options.policyFile, rules: enforcer.effective().length }, 'policy reloaded');
    }
  };
  process.on('SIGHUP', onHup);
  return () => process.off('SIGHUP', onHup);
}

/**
 * The api's identity and policy from the configuration, as the api role and the all-in-one start
 * them: throws (and the start stops) on a bad policy file or missing Keystone options; SIGHUP
 * re-reads the policy file until `close()`.
 */
export function apiAuthFromConfig(config: Pick<Config, 'v2' | 'keystoneAuthtoken' | 'osloPolicy'>, log: Logger): ApiAuth & { close: () => void } {
  const enforcer = loadEnforcer(config);
  const keystone = keystoneAuthFromConfig(config);
  const option = optionSource(config, 'osloPolicy.policyFile');
  warnMissingPolicyFile(enforcer, log, option);
  const close = watchPolicyReload(enforcer, log.child({ component: 'policy' }), option);
  log.info(
    {
      strategy: config.v2.authStrategy,
      policyFile: config.osloPolicy.policyFile ?? null,
      overrides: enforcer.effective().filter((r) => r.source.startsWith('file')).length,
    },
    'identity and policy loaded',
  );
  return { enforcer, ...(keystone ? { keystone } : {}), close };
}
