/**
 * The CLI's HTTP client of the operator API (`/cyborg/v1`). Errors come back typed: an ApiError
 * carries the API's stable code and status; an UnreachableError says the API could not be reached.
 */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly body: Record<string, unknown>) {
    super(message);
    this.name = 'ApiError';
  }
}

export class UnreachableError extends Error {
  constructor(readonly url: string, reason: string) {
    super(`cannot reach the Cyborg API at ${url}: ${reason}`);
    this.name = 'UnreachableError';
  }
}

export class ApiClient {
  constructor(private readonly baseUrl: string, private readonly timeoutMs: number) {}

  get<T>(path: string, query: Record<string, string | undefined> = {}): Promise<T> {
    const q = new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined));
    return this.call<T>('GET', `${path}${q.size ? `?${q}` : ''}`);
  }

  post<T>(path: string, body: Record<string, unknown> = {}): Promise<T> {
    return this.call<T>('POST', path, body);
  }

  private async call<T>(method: string, path: string, body?: Record<string, unknown>): Promise<T> {
    const url = `${this.baseUrl.replace(/\/+$/, '')}/cyborg/v1${path}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: { accept: 'application/json', 'x-user-id': 'cli', ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(stripUndefined(body)) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      const reason = e.name === 'TimeoutError' ? `no answer within ${Math.round(this.timeoutMs / 1000)} s` : e.cause?.code ?? e.cause?.message ?? e.message;
      throw new UnreachableError(this.baseUrl, reason);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      throw new ApiError(res.status, 'response.invalid', `the API answered ${res.status} with something that is not JSON`, {});
    }
    if (!res.ok) {
      const b = json as Record<string, unknown>;
      throw new ApiError(res.status, String(b.code ?? 'unknown'), String(b.message ?? b.error_message ?? `HTTP ${res.status}`), b);
    }
    return json as T;
  }
}

function stripUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
