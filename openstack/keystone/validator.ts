import { keystoneDown, NoAnswerError, openstackDispatcher, send, within, type LazyDispatcher } from './http.js';
import type { KeystoneSession } from './session.js';
import { TokenCache, type TokenCacheOptions } from './token-cache.js';
import { KeystoneUnavailableError, readToken, ServiceAuthError, type KeystoneToken } from './types.js';

export interface TokenValidatorOptions {
  /** The service user's session: its token is what asks Keystone about other tokens. */
  session: KeystoneSession;
  cache: Partial<TokenCacheOptions>;
  timeoutMs?: number;
  dispatcher?: LazyDispatcher;
  now?: () => number;
}

/**
 * keystonemiddleware's token check, in-process: `GET /v3/auth/tokens` with the token to check
 * in `X-Subject-Token` and the service user's token in `X-Auth-Token`, answers cached. Resolves
 * the token's data, or null for a token Keystone does not accept (invalid, expired, revoked);
 * throws KeystoneUnavailableError / ServiceAuthError when it cannot tell.
 */
export class TokenValidator {
  /** Requests sent to Keystone to validate (the benchmark reports them per API request). */
  keystoneRequests = 0;
  readonly cache: TokenCache;
  private readonly inflight = new Map<string, Promise<KeystoneToken | null>>();
  private readonly dispatcher: LazyDispatcher;
  private readonly now: () => number;

  constructor(private readonly o: TokenValidatorOptions) {
    this.now = o.now ?? Date.now;
    this.cache = new TokenCache({ maxEntries: 10_000, ttlMs: 300_000, negativeTtlMs: 10_000, now: this.now, ...o.cache });
    this.dispatcher = o.dispatcher ?? openstackDispatcher();
  }

  /** The service user's session (the api's name lookups ask Keystone with it too). */
  get session(): KeystoneSession {
    return this.o.session;
  }

  /** Keystone's v3 URL this validator asks (the api's sign-in asks the same Keystone). */
  get authUrl(): string {
    return this.o.session.authUrl;
  }

  async validate(token: string): Promise<KeystoneToken | null> {
    const cached = this.cache.get(token);
    if (cached.hit) return cached.token;
    // Requests with the same token at once ask Keystone once.
    const key = TokenCache.key(token);
    let p = this.inflight.get(key);
    if (!p) {
      // The token check's timeout holds end to end: the service user's own authentication and a
      // second try after a 401 are inside it, not added to it.
      const ms = this.o.timeoutMs ?? 10_000;
      p = within(
        ms,
        () => this.ask(token),
        (t) => new KeystoneUnavailableError(`Keystone is unreachable: no answer to a token validation within ${t} ms`),
      ).finally(() => this.inflight.delete(key));
      this.inflight.set(key, p);
    }
    return p;
  }

  private async ask(token: string): Promise<KeystoneToken | null> {
    for (let attempt = 0; ; attempt++) {
      const serviceToken = await this.o.session.token();
      this.keystoneRequests++;
      let res;
      try {
        res = await send(
          this.dispatcher,
          `${this.o.session.authUrl}/auth/tokens?nocatalog`,
          {
            method: 'GET',
            headers: { 'x-auth-token': serviceToken, 'x-subject-token': token, accept: 'application/json' },
            timeoutMs: this.o.timeoutMs ?? 10_000,
          },
          'Keystone',
        );
      } catch (err) {
        if (err instanceof NoAnswerError) throw keystoneDown(err);
        throw err;
      }
      if (res.status === 200) {
        const data = readToken(JSON.parse(res.text));
        if (data.expiresAt <= this.now()) {
          this.cache.putInvalid(token);
          return null;
        }
        this.cache.putValid(token, data);
        return data;
      }
      if (res.status === 404) {
        this.cache.putInvalid(token);
        return null;
      }
      if (res.status === 401 && attempt === 0) {
        // The service user's own token lapsed or was revoked: authenticate again, ask once more.
        this.o.session.invalidate(serviceToken);
        continue;
      }
      if (res.status >= 500) throw new KeystoneUnavailableError(`Keystone answered ${res.status} to a token validation`);
      throw new ServiceAuthError(
        `Keystone refused to validate a token for this service (${res.status}): check [keystone_authtoken]'s user and its roles (admin or service)`,
        res.status,
      );
    }
  }
}
