import { useEffect, useState } from 'preact/hooks';
import { session, SignInError, type Credentials, type Session } from '../auth.js';

/** Re-renders when the session changes (sign-in, sign-out, expiry). */
export function useSession(): Session {
  const [, setTick] = useState(0);
  useEffect(() => session.subscribe(() => setTick((n) => n + 1)), []);
  return session;
}

/**
 * The sign-in form of keystone mode: a user, password and project (domains default to
 * `Default`, as the openstack CLI's), or a token pasted from `openstack token issue`. The api
 * asks Keystone and keeps the token; the browser gets only an HttpOnly session cookie.
 */
export function SignIn({ s }: { s: Session }) {
  const [withToken, setWithToken] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [v, setV] = useState({ username: '', password: '', project_name: '', user_domain_name: '', project_domain_name: '', token: '' });
  const field = (name: keyof typeof v) => ({
    name,
    value: v[name],
    onInput: (e: Event) => setV({ ...v, [name]: (e.currentTarget as HTMLInputElement).value }),
  });
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError('');
    const c: Credentials = withToken
      ? { token: v.token.trim() }
      : {
          username: v.username,
          password: v.password,
          project_name: v.project_name,
          ...(v.user_domain_name ? { user_domain_name: v.user_domain_name } : {}),
          ...(v.project_domain_name ? { project_domain_name: v.project_domain_name } : {}),
        };
    try {
      await session.signIn(c);
    } catch (err) {
      setError(
        err instanceof SignInError
          ? err.status === 401
            ? `Not signed in: ${err.message}`
            : `${err.status}: ${err.message}`
          : `The api did not answer: ${String(err)}`,
      );
      setBusy(false);
    }
  };
  return (
    <div class="signin-page">
      <form class="dialog signin" data-testid="signin" aria-label="sign in" onSubmit={(e) => void submit(e)}>
        <h2>
          cyborg <span class="muted">sign in</span>
        </h2>
        <p class="muted">This cloud's Keystone decides who you are; what you may do follows its roles and the policy.</p>
        {s.error && (
          <p class="warn" data-testid="signin-reason">
            {s.error}
          </p>
        )}
        {withToken ? (
          <label>
            Keystone token
            <textarea {...field('token')} rows={3} required autoComplete="off" spellcheck={false} />
          </label>
        ) : (
          <>
            <label>
              user
              <input {...field('username')} required autoComplete="username" />
            </label>
            <label>
              password
              <input {...field('password')} type="password" required autoComplete="current-password" />
            </label>
            <label>
              project
              <input {...field('project_name')} required />
            </label>
            <details>
              <summary class="muted">domains (Default)</summary>
              <label>
                user domain
                <input {...field('user_domain_name')} placeholder="Default" />
              </label>
              <label>
                project domain
                <input {...field('project_domain_name')} placeholder="Default" />
              </label>
            </details>
          </>
        )}
        {error && (
          <p class="error" data-testid="signin-error">
            {error}
          </p>
        )}
        <div class="buttons">
          <button
            type="button"
            onClick={() => {
              setWithToken(!withToken);
              setError('');
            }}
          >
            {withToken ? 'use a password' : 'paste a token'}
          </button>
          <button type="submit" class="primary" disabled={busy} data-testid="signin-submit">
            {busy ? 'signing in…' : 'sign in'}
          </button>
        </div>
      </form>
    </div>
  );
}

/**
 * Keystone's token of the session expires soon: the password again keeps the page as it is
 * (the api trades it for a new token behind the same cookie); "sign out" ends it now.
 */
function Renew({ s }: { s: Session }) {
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const at = s.expiresAt;
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      await s.renew(password);
    } catch (err) {
      setError(err instanceof SignInError ? `${err.status}: ${err.message}` : `The api did not answer: ${String(err)}`);
      setBusy(false);
    }
  };
  return (
    <div class="overlay">
      <form class="dialog" data-testid="renew" aria-label="renew the session" onSubmit={(e) => void submit(e)}>
        <h3>Stay signed in</h3>
        <p class="muted" data-testid="renew-reason">
          Keystone's token for this session expires at {at ? new Date(at).toLocaleTimeString() : 'any moment'}. Enter the password of{' '}
          {s.who?.user.name ?? 'this user'} again to keep the page open.
        </p>
        <label>
          password
          <input
            name="password"
            type="password"
            required
            autoComplete="current-password"
            value={password}
            onInput={(e) => setPassword((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        {error && (
          <p class="error" data-testid="renew-error">
            {error}
          </p>
        )}
        <div class="buttons">
          <button type="button" onClick={() => void s.signOut()}>
            sign out
          </button>
          <button type="submit" class="primary" disabled={busy} data-testid="renew-submit">
            {busy ? 'renewing…' : 'renew'}
          </button>
        </div>
      </form>
    </div>
  );
}

/** Who is signed in, and the way out (keystone mode only); the renewal prompt when the token nears its expiry. */
export function Who() {
  const s = useSession();
  if (s.mode !== 'keystone' || !s.who) return null;
  const w = s.who;
  return (
    <span class="who" data-testid="who" title={`roles: ${w.roles.join(', ')}${w.expires_at ? ` · session until ${w.expires_at}` : ''}`}>
      {w.user.name ?? w.user.id} <span class="muted">@ {w.project.name ?? w.project.id ?? 'no project'}</span>
      <button type="button" data-testid="signout" onClick={() => void s.signOut()}>
        sign out
      </button>
      {s.renewDue && <Renew s={s} />}
    </span>
  );
}
