import { findEndpoint } from './catalog.js';
import { keystoneDown, NoAnswerError, openstackDispatcher, send, within, type HttpAnswer, type LazyDispatcher } from './http.js';
import { authBody, KeystoneUnavailableError, readToken, ServiceAuthError, type AuthMethod, type KeystoneToken } from './types.js';
import { CyborgError } from '../../errors/index.js';

export interface KeystoneSessionOptions {
  /** Keystone's v3 URL (`…/v3`; a bare `http://host:5000` gets `/v3` added). */
  authUrl: string;
  auth: AuthMethod;
  /** For request(): the catalog entry to call (`placement`, `compute`). */
  serviceType?: string;
  /** keystoneauth's `valid_interfaces`, in order of preference. */
  interfaces?: readonly string[];
  region?: string;
  /** keystoneauth's `endpoint_override`: skips the catalog lookup. */
  endpointOverride?: string;
  timeoutMs?: number;
  dispatcher?: LazyDispatcher;
  /** Adds `X-Service-Token` with that session's token (`self`: this session's own) to every request, where Nova wants one. */
  serviceTokenFrom?: KeystoneSession | 'self';
  /** Re-authenticate this long before the token expires (keystoneauth's stale window). */
  expiryMarginMs?: number;
  now?: () => number;
  /** A token kept from before (the CLI's token cache): used until it is about to expire. */
  seed?: { token: string; data: KeystoneToken };
  /** Called with every token this session authenticates for (the CLI's token cache keeps it). */
  onAuthenticated?: (token: string, data: KeystoneToken) => void;
}

interface Held {
  token: string;
  data: KeystoneToken;
  /** Epoch ms after which the token counts as expiring: authenticate again. */
  renewAt: number;
}

/** Keystone's v3 base URL from what an operator writes as `auth_url`. */
export function v3Url(authUrl: string): string {
  const base = authUrl.replace(/\/+$/, '');
  return /\/v3$/.test(base) ? base : `${base}/v3`;
}

/**
 * keystoneauth's Session for one service user: authenticates (password or application
 * credential), keeps the token and re-authenticates shortly before it expires or when a service
 * answers 401 (then retries the request once), finds the service's endpoint in the token's
 * catalog, and can send a service token beside its own.
 */
export class KeystoneSession {
  /** How many times this session authenticated (tests and the benchmark read it). */
  authentications = 0;
  readonly authUrl: string;
  private held: Held | undefined;
  private pending: Promise<Held> | undefined;
  private readonly dispatcher: LazyDispatcher;
  private readonly timeoutMs: number;
  private readonly now: () => number;

  constructor(private readonly o: KeystoneSessionOptions) {
    this.authUrl = v3Url(o.authUrl);
    this.dispatcher = o.dispatcher ?? openstackDispatcher();
    this.timeoutMs = o.timeoutMs ?? 10_000;
    this.now = o.now ?? Date.now;
    if (o.seed) {
      const renewAt = o.seed.data.expiresAt - this.margin(o.seed.data);
      if (renewAt > this.now()) this.held = { ...o.seed, renewAt };
    }
  }

  /** The session's token, authenticating first when there is none or it is about to expire. */
  async token(): Promise<string> {
    return (await this.current()).token;
  }

  /** What Keystone said about the session's own token (user, project, roles, catalog). */
  async tokenData(): Promise<KeystoneToken> {
    return (await this.current()).data;
  }

  /** Forgets the token (after a 401); only if it is still the one given, so concurrent 401s re-authenticate once. */
  invalidate(token?: string): void {
    if (!token || this.held?.token === token) this.held = undefined;
  }

  /** The endpoint request() calls: the override, or the catalog's entry for the service type. */
  async endpoint(): Promise<string> {
    if (this.o.endpointOverride) return this.o.endpointOverride.replace(/\/+$/, '');
    if (!this.o.serviceType) throw new CyborgError('config.invalid', 'this Keystone session has no service type to look up');
    const { data } = await this.current();
    const url = findEndpoint(data.catalog, { serviceType: this.o.serviceType, interfaces: this.o.interfaces, region: this.o.region });
    if (!url) {
      throw new CyborgError(
        'keystone.no_endpoint',
        `Keystone's catalog has no ${this.o.serviceType} endpoint (interfaces ${(this.o.interfaces ?? ['internal', 'public']).join(', ')}${this.o.region ? `, region ${this.o.region}` : ''})`,
      );
    }
    return url;
  }

  /**
   * One request to the service, with the session's token (and service token); on 401 the token
   * is dropped, the session authenticates again and the request is sent once more.
   */
  async request(path: string, o: { method: string; headers?: Record<string, string>; body?: string; timeoutMs?: number }): Promise<HttpAnswer> {
    // The call's timeout holds end to end: the token, the catalog and a second try after a 401 are inside it.
    const what = `${this.o.serviceType ?? 'service'} ${o.method} ${path}`;
    return within(
      o.timeoutMs ?? this.timeoutMs,
      () => this.requestOnce(path, o),
      (t) => new NoAnswerError(`${what}: no answer within ${t} ms`),
    );
  }

  private async requestOnce(path: string, o: { method: string; headers?: Record<string, string>; body?: string; timeoutMs?: number }): Promise<HttpAnswer> {
    const base = await this.endpoint();
    for (let attempt = 0; ; attempt++) {
      const token = await this.token();
      const headers: Record<string, string> = { ...o.headers, 'x-auth-token': token };
      const service = this.o.serviceTokenFrom === 'self' ? this : this.o.serviceTokenFrom;
      if (service) headers['x-service-token'] = await service.token();
      const res = await send(
        this.dispatcher,
        base + path,
        { method: o.method, headers, body: o.body, timeoutMs: o.timeoutMs ?? this.timeoutMs },
        this.o.serviceType ?? 'service',
      );
      if (res.status !== 401 || attempt > 0) return res;
      this.invalidate(token);
      service?.invalidate(headers['x-service-token']);
    }
  }

  private async current(): Promise<Held> {
    const h = this.held;
    if (h && h.renewAt > this.now()) return h;
    this.pending ??= this.authenticate().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** keystoneauth's stale window: a minute, or half the token's lifetime when that is shorter. */
  private margin(data: KeystoneToken): number {
    return this.o.expiryMarginMs ?? Math.min(60_000, Math.max(0, data.expiresAt - this.now()) / 2);
  }

  private async authenticate(): Promise<Held> {
    let res: HttpAnswer;
    try {
      res = await send(
        this.dispatcher,
        `${this.authUrl}/auth/tokens`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify(authBody(this.o.auth)),
          timeoutMs: this.timeoutMs,
        },
        'Keystone',
      );
    } catch (err) {
      if (err instanceof NoAnswerError) throw keystoneDown(err);
      throw err;
    }
    if (res.status >= 500) throw new KeystoneUnavailableError(`Keystone answered ${res.status} to this service's authentication`);
    const token = res.headers['x-subject-token'];
    if (res.status !== 201 || !token) {
      throw new ServiceAuthError(`Keystone refused this service's credentials (${describe(this.o.auth)}): ${res.status} ${res.text.slice(0, 200)}`, res.status);
    }
    this.authentications++;
    const data = readToken(JSON.parse(res.text));
    this.held = { token, data, renewAt: data.expiresAt - this.margin(data) };
    this.o.onAuthenticated?.(token, data);
    return this.held;
  }
}

function describe(a: AuthMethod): string {
  if (a.type === 'token') return 'a token';
  return a.type === 'password' ? `user ${a.username}` : `application credential ${a.id ?? a.name}`;
}
