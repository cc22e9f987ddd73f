import { readFileSync } from 'node:fs';
import type { Authenticator, NodeConnectionOptions } from '@nats-io/transport-node';

/** The NATS client module: connectNats imports it when it connects (not loaded by the all-in-one). */
export type NatsClient = typeof import('@nats-io/transport-node');
import { ConfigError } from '../config/index.js';

/** How a role proves itself to the NATS server (config `nats`: `[nats]` in cyborg.conf, NATS_* variables). */
export interface NatsAuthSettings {
  user?: string | undefined;
  password?: string | undefined;
  token?: string | undefined;
  nkeySeedFile?: string | undefined;
  credsFile?: string | undefined;
  tlsCaFile?: string | undefined;
  tlsCertFile?: string | undefined;
  tlsKeyFile?: string | undefined;
}

/** What `connect()` is given: the servers without credentials in them, and the auth and TLS options. */
export interface NatsConnectSettings {
  servers: string[];
  options: Pick<NodeConnectionOptions, 'user' | 'pass' | 'token' | 'tls'>;
  /** An nkey or creds authenticator, built from the secret read at start once the client is loaded. */
  authenticator?: (client: NatsClient) => Authenticator;
  /** How this connection authenticates, for logs and errors: never the secret itself. */
  identity: string;
  /** Where each credential came from (an option, a variable, the URL), for the error of a refused one. */
  hint: string;
}

/**
 * Reads the NATS credentials of a role once, at start: user and password (from the options or
 * from `nats://user:pass@host` in the URL), a token (`nats://token@host`), an nkey seed file or
 * a creds file (user JWT + seed, as `nsc` writes it) — one of them. TLS is on with a `tls://`
 * URL or any TLS file; a CA file trusts a private CA, a certificate and key authenticate the
 * client too. A setting that cannot work (two methods at once, a file that cannot be read) is a
 * ConfigError naming it.
 */
export function natsConnectSettings(url: string, auth: NatsAuthSettings = {}): NatsConnectSettings {
  let fromUrl: { user?: string; password?: string; token?: string } = {};
  let tlsUrl = false;
  const servers = url
    .split(',')
    .map((raw) => raw.trim())
    .filter(Boolean)
    .map((raw) => {
      const m = /^([a-z]+):\/\//i.exec(raw);
      const scheme = m ? m[1]!.toLowerCase() : 'nats';
      if (!['nats', 'tls'].includes(scheme))
        throw new ConfigError(`invalid configuration: NATS_URL / [DEFAULT] transport_url: scheme ${scheme}:// is not NATS (nats:// or tls://)`);
      if (scheme === 'tls') tlsUrl = true;
      let u: URL;
      try {
        u = new URL(m ? raw : `nats://${raw}`);
      } catch {
        throw new ConfigError('invalid configuration: NATS_URL / [DEFAULT] transport_url: not a URL (nats://[user:password@]host:4222)');
      }
      if (u.username || u.password) {
        const creds = u.password
          ? { user: decodeURIComponent(u.username), password: decodeURIComponent(u.password) }
          : { token: decodeURIComponent(u.username) };
        if (Object.keys(fromUrl).length > 0 && JSON.stringify(fromUrl) !== JSON.stringify(creds)) {
          throw new ConfigError('invalid configuration: NATS_URL / [DEFAULT] transport_url: the servers name different credentials; give them once, in [nats]');
        }
        fromUrl = creds;
      }
      // nats.js takes host:port; the scheme only said TLS or not, the credentials travel apart.
      return `${u.hostname.includes(':') ? `[${u.hostname}]` : u.hostname}:${u.port || '4222'}`;
    });
  if (servers.length === 0) throw new ConfigError('invalid configuration: NATS_URL / [DEFAULT] transport_url names no server');

  const user = auth.user ?? fromUrl.user;
  const password = auth.password ?? (auth.user === undefined ? fromUrl.password : undefined);
  const token = auth.token ?? fromUrl.token;
  const methods = [
    user !== undefined && 'user/password',
    token !== undefined && 'token',
    auth.nkeySeedFile !== undefined && 'nkey seed file',
    auth.credsFile !== undefined && 'creds file',
  ].filter(Boolean);
  if (methods.length > 1) throw new ConfigError(`invalid configuration: [nats]: give one way to authenticate to NATS, not ${methods.join(' and ')}`);
  if (password !== undefined && user === undefined)
    throw new ConfigError('invalid configuration: [nats] password (NATS_PASSWORD) needs [nats] user (NATS_USER)');
  if (user !== undefined && password === undefined)
    throw new ConfigError(`invalid configuration: [nats] user (NATS_USER) ${user} needs [nats] password (NATS_PASSWORD)`);

  const options: NatsConnectSettings['options'] = {};
  let identity = 'no credentials';
  let authenticator: NatsConnectSettings['authenticator'];
  let hint =
    'this NATS server wants credentials: set [nats] user and password (NATS_USER, NATS_PASSWORD), token (NATS_TOKEN), nkey_seed_file (NATS_NKEY_SEED_FILE) or creds_file (NATS_CREDS_FILE)';
  if (user !== undefined) {
    options.user = user;
    options.pass = password;
    identity = `user ${user}`;
    hint =
      auth.user !== undefined
        ? 'check [nats] user and password (NATS_USER, NATS_PASSWORD)'
        : 'check the user and password in NATS_URL / [DEFAULT] transport_url';
  } else if (token !== undefined) {
    options.token = token;
    identity = 'a token';
    hint = auth.token !== undefined ? 'check [nats] token (NATS_TOKEN)' : 'check the token in NATS_URL / [DEFAULT] transport_url';
  } else if (auth.nkeySeedFile !== undefined) {
    const seed = readSecret(auth.nkeySeedFile, '[nats] nkey_seed_file (NATS_NKEY_SEED_FILE)');
    authenticator = (c) => c.nkeyAuthenticator(new TextEncoder().encode(seed.trim()));
    identity = 'an nkey';
    hint = `check [nats] nkey_seed_file (NATS_NKEY_SEED_FILE) ${auth.nkeySeedFile}: its public key must be a user of the server`;
  } else if (auth.credsFile !== undefined) {
    const creds = readSecret(auth.credsFile, '[nats] creds_file (NATS_CREDS_FILE)');
    authenticator = (c) => c.credsAuthenticator(new TextEncoder().encode(creds)) as Authenticator;
    identity = 'a creds file';
    hint = `check [nats] creds_file (NATS_CREDS_FILE) ${auth.credsFile}`;
  }

  if ((auth.tlsCertFile === undefined) !== (auth.tlsKeyFile === undefined)) {
    throw new ConfigError('invalid configuration: [nats] tls_cert_file (NATS_TLS_CERT_FILE) and tls_key_file (NATS_TLS_KEY_FILE) go together');
  }
  if (tlsUrl || auth.tlsCaFile !== undefined || auth.tlsCertFile !== undefined) {
    // Read here so that a missing file stops the start with its option named, not a reconnect loop.
    options.tls = {
      ...(auth.tlsCaFile !== undefined ? { ca: readSecret(auth.tlsCaFile, '[nats] tls_ca_file (NATS_TLS_CA_FILE)') } : {}),
      ...(auth.tlsCertFile !== undefined ? { cert: readSecret(auth.tlsCertFile, '[nats] tls_cert_file (NATS_TLS_CERT_FILE)') } : {}),
      ...(auth.tlsKeyFile !== undefined ? { key: readSecret(auth.tlsKeyFile, '[nats] tls_key_file (NATS_TLS_KEY_FILE)') } : {}),
    };
  }
  return { servers, options, identity, hint, ...(authenticator ? { authenticator } : {}) };
}

function readSecret(path: string, option: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${option}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

/**
 * The error a role stops with when the server refuses its credentials: it says NATS
 * authentication, who the role tried to be and which setting to check (never the secret).
 */
export function natsAuthError(err: unknown, settings: NatsConnectSettings): ConfigError | undefined {
  const e = err as Error & { cause?: Error };
  const name = e?.name === 'AuthorizationError' ? e.name : e?.cause?.name;
  const text = `${e?.message ?? ''} ${e?.cause?.message ?? ''}`;
  if (name !== 'AuthorizationError' && !/authorization violation|authentication/i.test(text)) return undefined;
  return new ConfigError(
    `NATS authentication failed at ${settings.servers.join(',')} with ${settings.identity}: the server refused it (${(e.cause ?? e).message}); ${settings.hint}`,
  );
}
