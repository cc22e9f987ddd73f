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
  constructor(
    readonly status: number,
    message: string,
  ) {
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

/** How long before Keystone's token expires the page asks for the password again (or a quarter of what is left, when less). */
const RENEW_BEFORE_MS = 5 * 60_000;
/** setTimeout's longest delay (2^31 - 1 ms); a token that lives longer is looked at again then. */
const MAX_DELAY_MS = 2_147_483_647;

const clock = (ms: number): string => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

/**
 * Who uses the page. In keystone mode the page never holds the token: signing in gives the
 * browser an HttpOnly, SameSite=Strict session cookie that page scripts cannot read and other
 * sites' pages do not send; the api keeps the token behind it (docs/visualizer.md). The cookie
 * survives a reload: `start()` asks the api who it names. Before Keystone's token expires
 * (`renewDue`) the page asks for the password again and renews the session in place; if nobody
 * does, the expiry brings the form back saying why. A 401 on any request (the token was revoked,
 * the api restarted) calls `expired()`, which does the same.
 */
export class Session {
  mode: Mode = 'unknown';
  /** Why the mode is still unknown (the api did not answer), or why the user was signed out. */
  error = '';
  who: WhoAmI | null = null;
  /** Keystone's token of this session expires soon: the page asks for the password to renew it. */
  renewDue = false;
  private timers: ReturnType<typeof setTimeout>[] = [];
  private listeners = new Set<Listener>();

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** The page may show the fleet: noauth, or signed in. */
  get ready(): boolean {
    return this.mode === 'noauth' || (this.mode === 'keystone' && this.who !== null);
  }

  /** Epoch ms when the session ends (Keystone's token expiry), or null. */
  get expiresAt(): number | null {
    const t = Date.parse(this.who?.expires_at ?? '');
    return Number.isFinite(t) ? t : null;
  }

  /** Nothing to add: the session cookie travels with every same-origin request by itself. */
  headers(): Record<string, string> {
    return {};
  }

  /** Whether the policy lets the caller through `rule` (noauth: the api trusts the page as an admin). */
  may(rule: string): boolean {
    if (this.mode !== 'keystone') return true;
    return this.who?.allowed.includes(rule) ?? false;
  }

  /** Asks the api whether it authenticates (GET auth/mode answers without a token) and, if so, whether the cookie names a live session. */
  async start(): Promise<void> {
    try {
      const mode = await json<{ strategy: 'noauth' | 'keystone' }>(await fetch(`${BASE}/auth/mode`, { headers: { accept: 'application/json' } }));
      if (mode.strategy === 'keystone') {
        // A reload: the session cookie (if any) still names the session; 401 means there is none.
        const res = await fetch(`${BASE}/auth/whoami`, { headers: { accept: 'application/json' } });
        if (res.ok) this.adopt(await json<WhoAmI>(res));
      }
      this.mode = mode.strategy;
      this.error = '';
    } catch (err) {
      this.error = `cannot reach the api: ${err instanceof Error ? err.message : String(err)}`;
    }
    this.changed();
  }

  async signIn(c: Credentials): Promise<void> {
    await json(
      await fetch(`${BASE}/auth/session`, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/json' },
        body: JSON.stringify(c),
      }),
    );
    this.adopt(await json<WhoAmI>(await fetch(`${BASE}/auth/whoami`, { headers: { accept: 'application/json' } })));
    this.changed();
  }

  /** The password again, for a new Keystone token behind the same session (the page stays as it is). */
  async renew(password: string): Promise<void> {
    await json(
      await fetch(`${BASE}/auth/session/renew`, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/json' },
        body: JSON.stringify({ password }),
      }),
    );
    this.adopt(await json<WhoAmI>(await fetch(`${BASE}/auth/whoami`, { headers: { accept: 'application/json' } })));
    this.changed();
  }

  /** Ends the session on the api (which revokes its token) and here; `why` is shown on the form. */
  async signOut(why = ''): Promise<void> {
    if (this.mode === 'keystone' && this.who) await fetch(`${BASE}/auth/session`, { method: 'DELETE' }).catch(() => undefined);
    this.end(why);
  }

  /** A 401 from the api: the session is no longer good. */
  expired(): void {
    if (this.mode !== 'keystone' || this.who === null) return;
    this.end('Your session has ended (the token expired or was revoked): sign in again.');
  }

  private adopt(who: WhoAmI): void {
    this.who = who;
    this.error = '';
    this.renewDue = false;
    this.schedule();
  }

  /** The renewal prompt shortly before the token expires, and the end of the session at its expiry. */
  private schedule(): void {
    this.clearTimers();
    const at = this.expiresAt;
    if (at === null) return;
    const left = at - Date.now();
    if (left > MAX_DELAY_MS) {
      this.timers.push(setTimeout(() => this.schedule(), MAX_DELAY_MS));
      return;
    }
    const promptIn = Math.max(0, left - Math.min(RENEW_BEFORE_MS, left / 4));
    this.timers.push(
      setTimeout(() => {
        this.renewDue = true;
        this.changed();
      }, promptIn),
    );
    this.timers.push(setTimeout(() => this.end(`Your session ended at ${clock(at)}: Keystone's token for it expired. Sign in again.`), Math.max(0, left)));
  }

  private end(why: string): void {
    this.clearTimers();
    this.who = null;
    this.renewDue = false;
    this.error = why;
    this.changed();
  }

  private clearTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}

export const session = new Session();
