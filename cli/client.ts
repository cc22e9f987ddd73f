/**
 * The CLI's HTTP client of the operator API (`/cyborg/v1`). Errors come back typed: an ApiError
 * carries the API's stable code and status; an UnreachableError says the API could not be reached.
 *
 * It uses undici's `request`, not `fetch`: fetch refuses the Fetch standard's "bad ports", among
 * them Cyborg's own 6666, and a client must reach any port an operator configured.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export class UnreachableError extends Error {
  constructor(
    readonly url: string,
    reason: string,
  ) {
    super(`cannot reach the Cyborg API at ${url}: ${reason}`);
    this.name = 'UnreachableError';
  }
}

/** Where the client gets the `X-Auth-Token` it sends (a Keystone session, or a token as given). */
export interface TokenSource {
  token(): Promise<string>;
  /** The API refused this token (401): forget it; true when asking again may give a fresh one. */
  invalidate(token: string): boolean;
}

export class ApiClient {
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs: number,
    private readonly auth?: TokenSource,
  ) {}

  get<T>(path: string, query: Record<string, string | undefined> = {}): Promise<T> {
    const q = new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined));
    return this.call<T>('GET', `${path}${q.size ? `?${q}` : ''}`);
  }

  /** Every item of a paged list: follows the operator API's `next` links to the last page. */
  async list<T>(path: string, key: string, query: Record<string, string | undefined> = {}): Promise<T[]> {
    const items: T[] = [];
    let page = await this.get<Record<string, unknown>>(path, query);
    for (;;) {
      items.push(...((page[key] as T[] | undefined) ?? []));
      const next = page.next;
      if (typeof next !== 'string') return items;
      page = await this.call<Record<string, unknown>>('GET', next.replace(/^.*?\/cyborg\/v1/, ''));
    }
  }

  post<T>(path: string, body: Record<string, unknown> = {}): Promise<T> {
    return this.call<T>('POST', path, body);
  }

  delete<T>(path: string): Promise<T> {
    return this.call<T>('DELETE', path);
  }

  /**
   * A POST whose work may outlast the API's own deadline: `accepted` when it answered
   * `202 Accepted`, with the path (under /cyborg/v1) of the resource to follow until it settles.
   */
  async postAccepting<T>(path: string, body: Record<string, unknown> = {}): Promise<{ body: T; accepted?: { location: string } }> {
    const r = await this.send<T>('POST', path, body);
    if (r.status !== 202) return { body: r.body };
    const location = (r.location ?? path.replace(/\/[^/]+$/, '')).replace(/^.*?\/cyborg\/v1/, '');
    return { body: r.body, accepted: { location } };
  }

  private async call<T>(method: string, path: string, body?: Record<string, unknown>): Promise<T> {
    return (await this.send<T>(method, path, body)).body;
  }

  private async send<T>(
    method: string,
    path: string,
    body?: Record<string, unknown>,
    retried = false,
  ): Promise<{ status: number; body: T; location?: string }> {
    const url = `${this.baseUrl.replace(/\/+$/, '')}/cyborg/v1${path}`;
    const token = this.auth ? await this.auth.token() : undefined;
    let status: number;
    let text: string;
    let location: string | undefined;
    try {
      // Imported at the first request: every cyborg process loads this file through cli/main,
      // the all-in-one's included, and most never call the API (issue 43: an all-in-one in 256 MB).
      const { request } = await import('undici');
      const res = await request(url, {
        method: method as 'GET' | 'POST' | 'DELETE',
        headers: {
          accept: 'application/json',
          'x-user-id': 'cli',
          ...(token ? { 'x-auth-token': token } : {}),
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        ...(body ? { body: JSON.stringify(stripUndefined(body)) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      status = res.statusCode;
      const loc = res.headers.location;
      location = Array.isArray(loc) ? loc[0] : loc;
      text = await res.body.text();
    } catch (err) {
      throw new UnreachableError(this.baseUrl, reasonOf(err, this.timeoutMs));
    }
    // A token that expired between two calls: keystoneauth signs in again and repeats the request once.
    if (status === 401 && token && !retried && this.auth!.invalidate(token)) return this.send<T>(method, path, body, true);
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      throw new ApiError(status, 'response.invalid', `the API answered ${status} with something that is not JSON`, {});
    }
    if (status < 200 || status > 299) {
      const b = json as Record<string, unknown>;
      throw new ApiError(status, String(b.code ?? 'unknown'), String(b.message ?? b.error_message ?? `HTTP ${status}`), b);
    }
    return { status, body: json as T, ...(location ? { location } : {}) };
  }
}

/** Why the request got no answer, in words: a timeout, or the socket's error code. */
function reasonOf(err: unknown, timeoutMs: number): string {
  const e = err as Error & { code?: string; cause?: { code?: string; message?: string } };
  // undici's RequestAbortedError is named AbortError, its code UND_ERR_ABORTED.
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_ABORTED') return `no answer within ${Math.round(timeoutMs / 1000)} s`;
  return e.code && !e.code.startsWith('UND_ERR_') ? e.code : (e.cause?.code ?? e.code ?? e.cause?.message ?? e.message);
}

function stripUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
