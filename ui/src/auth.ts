/** The operator API, same origin (the api role serves this page). */
export const BASE = '/cyborg/v1';

/** What the api says about the caller (GET auth/whoami). */
export interface WhoAmI {
  strategy: 'noauth' | 'keystone';
  user: { id: string | null; name: string | null };
  project: { id: string | null; name: string | null };
  roles: string[];
  expires_at: string | null;
  /** The operator rules (`cyborg:operator:*`) this caller passes now. */
  allowed: string[];
}

/** How the user signs in: a password for a project, or a Keystone token of their own. */
export type Credentials =
  | { username: string; password: string; project_name: string; user_domain_name?: string; project_domain_name?: string }
  | { token: string };

/** Refused or failed sign-in, with the api's message (shown on the form). */
export class SignInError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = 'SignInError';
  }
}

/** `unknown` until the api said whether it authenticates (`keystone`) or not (`noauth`). */
export type Mode = 'unknown' | 'noauth' | 'keystone';

type Listener = () => void;

async function json<T>(res: Response): Promise<T> {
  const text = await res.text();
  const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
  if (!res.ok) throw new SignInError(res.status, String(body.message ?? body.error_message ?? `${res.status} ${res.statusText}`));
  return body as T;
}

/**
 * Who uses the page. In keystone mode the token lives here, in this object's memory only: never
 * in localStorage, sessionStorage or a cookie, so closing (or reloading) the tab forgets it and
 * no other page of the origin can read it. Every request to the api adds `headers()`; a 401 on
 * any of them (the token expired or was revoked) calls `expired()`, which signs out and brings
 * the form back with the reason.
 */
export class Session {
  mode: Mode = 'unknown';
  /** Why the mode is still unknown (the api did not answer), or why the user was signed out. */
  error = '';
  who: WhoAmI | null = null;
  private token: string | null = null;
  private listeners = new Set<Listener>();

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** The page may show the fleet: noauth, or signed in. */
  get ready(): boolean {
    return this.mode === 'noauth' || (this.mode === 'keystone' && this.token !== null && this.who !== null);
  }

  headers(): Record<string, string> {
    return this.token ? { 'x-auth-token': this.token } : {};
  }

  /** Whether the policy lets the caller through `rule` (noauth: the api trusts the page as an admin). */
  may(rule: string): boolean {
    if (this.mode !== 'keystone') return true;
    return this.who?.allowed.includes(rule) ?? false;
  }

  /** Asks the api whether it authenticates (GET auth/mode answers without a token). */
  async start(): Promise<void> {
    try {
      const mode = await json<{ strategy: 'noauth' | 'keystone' }>(await fetch(`${BASE}/auth/mode`, { headers: { accept: 'application/json' } }));
      this.mode = mode.strategy;
      this.error = '';
    } catch (err) {
      this.error = `cannot reach the api: ${err instanceof Error ? err.message : String(err)}`;
    }
    this.changed();
  }

  async signIn(c: Credentials): Promise<void> {
    const signed = await json<{ token: string }>(await fetch(`${BASE}/auth/tokens`, {
      method: 'POST', headers: { accept: 'application/json', 'content-type': 'application/json' }, body: JSON.stringify(c),
    }));
    const who = await json<WhoAmI>(await fetch(`${BASE}/auth/whoami`, { headers: { accept: 'application/json', 'x-auth-token': signed.token } }));
    this.token = signed.token;
    this.who = who;
    this.error = '';
    this.changed();
  }

  /** Forgets the token; `why` is shown on the form. */
  signOut(why = ''): void {
    this.token = null;
    this.who = null;
    this.error = why;
    this.changed();
  }

  /** A 401 from the api: the token is no longer good. */
  expired(): void {
    if (this.mode !== 'keystone' || this.token === null) return;
    this.signOut('Your session has ended (the token expired or was revoked): sign in again.');
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}

export const session = new Session();
