import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { KeystoneToken } from '../../openstack/keystone/index.js';
import { CyborgError } from '../../errors/index.js';

/** The cookie's name; its path is the operator API's, so no other route (v2, the page itself) ever gets it. */
export const SESSION_COOKIE = 'cyborg_session';
export const SESSION_PATH = '/cyborg/v1';

/** One signed-in browser: the Keystone token stays here, the browser holds only the session's id. */
export interface BrowserSession {
  token: string;
  /** Epoch ms: Keystone's expiry of the token (the session cannot outlive it). */
  expiresAt: number;
  userId: string;
  userName: string | null;
  userDomainId: string | null;
  projectId: string | null;
  projectName: string | null;
  /** `password`: the api asked Keystone for the token, so signing out revokes it; `token`: the user's own, only forgotten. */
  obtained: 'password' | 'token';
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The browser session the request's cookie named (operator routes; undefined without one). */
    browserSession?: { id: string; session: BrowserSession };
  }
}

/**
 * The api's sessions for browsers, in this process's memory: a cookie holds a random id (256
 * bits); the map is keyed by the id's SHA-256, so not even a dump of the process hands out a
 * usable cookie. An id that is not here — forged, ended, or from before a restart — is refused.
 * Behind several api processes, a browser must come back to the one that signed it in (sticky
 * sessions), or sign in again.
 */
export class BrowserSessions {
  private readonly byHash = new Map<string, BrowserSession>();

  constructor(
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.byHash.size;
  }

  /** A new session for a token Keystone issued or accepted; returns the id the cookie carries. */
  create(token: string, data: KeystoneToken, obtained: BrowserSession['obtained']): { id: string; session: BrowserSession } {
    this.prune();
    // Oldest first: a Map keeps insertion order.
    while (this.byHash.size >= this.maxEntries) this.byHash.delete(this.byHash.keys().next().value!);
    const id = randomBytes(32).toString('base64url');
    const session = fromToken(token, data, obtained);
    this.byHash.set(hash(id), session);
    return { id, session };
  }

  /** The live session of an id; an expired one is dropped and undefined. */
  get(id: string): BrowserSession | undefined {
    const key = hash(id);
    const s = this.byHash.get(key);
    if (s && s.expiresAt <= this.now()) {
      this.byHash.delete(key);
      return undefined;
    }
    return s;
  }

  /** The session's new token (a renewal with the password): same id, a later expiry. */
  renew(id: string, token: string, data: KeystoneToken): BrowserSession | undefined {
    const key = hash(id);
    const old = this.byHash.get(key);
    if (!old) return undefined;
    const s = fromToken(token, data, 'password');
    this.byHash.set(key, s);
    return s;
  }

  end(id: string): BrowserSession | undefined {
    const key = hash(id);
    const s = this.byHash.get(key);
    this.byHash.delete(key);
    return s;
  }

  private prune(): void {
    const now = this.now();
    for (const [k, s] of this.byHash) if (s.expiresAt <= now) this.byHash.delete(k);
  }
}

function hash(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}

function fromToken(token: string, d: KeystoneToken, obtained: BrowserSession['obtained']): BrowserSession {
  return {
    token,
    expiresAt: d.expiresAt,
    userId: d.userId,
    userName: d.userName,
    userDomainId: d.userDomainId,
    projectId: d.projectId,
    projectName: d.projectName,
    obtained,
  };
}

/** The value of one cookie in a `Cookie` header (RFC 6265 §5.4: `name=value` pairs split by `;`). */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name)
      return part
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1');
  }
  return undefined;
}

/**
 * The `Set-Cookie` for a session: HttpOnly (no page script reads it), SameSite=Strict (no other
 * site's page sends it), the operator API's path, Secure where the request came over HTTPS, and
 * no longer than the Keystone token lives. `maxAgeS` 0 deletes it.
 */
export function sessionCookie(id: string, maxAgeS: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${id}; Path=${SESSION_PATH}; Max-Age=${Math.max(0, Math.floor(maxAgeS))}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

export function clearSessionCookie(req: FastifyRequest): string {
  return sessionCookie('', 0, req.protocol === 'https');
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Operator routes that take no identity. */
const OPEN = new Set(['mode', 'tokens', 'session'].map((r) => `${SESSION_PATH}/auth/${r}`));

/**
 * The CSRF defence beside SameSite: a write must come from this api's own pages. Its `Origin`
 * (or, where a browser sent none, its `Referer`'s origin) must be the api's own scheme and host,
 * and `Sec-Fetch-Site`, where sent, must not say another site. Returns why not, or undefined.
 */
export function crossSiteReason(req: FastifyRequest): string | undefined {
  const own = originOf(`${req.protocol}://${req.host}`);
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return `the browser says it came from another site (Sec-Fetch-Site: ${site})`;
  const sent = typeof req.headers.origin === 'string' ? req.headers.origin : typeof req.headers.referer === 'string' ? req.headers.referer : undefined;
  if (!sent) return 'it names no Origin';
  // "null" (a sandboxed frame, a file: page) and anything unreadable are no origin of ours.
  const origin = originOf(sent);
  if (!origin || !own || origin !== own) return `its Origin ${origin ?? sent.slice(0, 100)} is not this api's (${own ?? req.host})`;
  return undefined;
}

/** `scheme://host[:port]` as a browser writes it (default ports dropped), or undefined. */
function originOf(url: string): string | undefined {
  try {
    const o = new URL(url).origin;
    return o === 'null' ? undefined : o;
  } catch {
    return undefined;
  }
}

export function isWrite(req: FastifyRequest): boolean {
  return !SAFE.has(req.method);
}

/**
 * Operator routes take the browser session's cookie in place of `X-Auth-Token`: a request
 * with the cookie and no token gets its session's token for the policy hook to validate, as
 * if it had sent it. Every write carrying the cookie must pass the Origin check (403
 * `request.forbidden`, reason `cross_site`); an unknown cookie is a 401 that clears it; a
 * session whose token Keystone refuses is ended. A request with its own X-Auth-Token ignores
 * the cookie (the CLI and scripts never send one).
 */
export function installBrowserSessions(scope: FastifyInstance, sessions: BrowserSessions): void {
  scope.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const id = readCookie(req.headers.cookie, SESSION_COOKIE);
    // noauth has no sessions: a cookie left from a keystone-mode run on this address means nothing.
    if (!id || req.headers['x-auth-token'] || req.server.cyborgAuth.strategy !== 'keystone') return;
    if (isWrite(req)) {
      const why = crossSiteReason(req);
      if (why)
        throw new CyborgError('request.forbidden', `A write carrying the session cookie must come from this api's own page: ${why}.`, { reason: 'cross_site' });
    }
    const session = sessions.get(id);
    if (!session) {
      void reply.header('set-cookie', clearSessionCookie(req));
      // Where no identity is needed (the mode, signing in or out), a dead cookie is only cleared.
      if (OPEN.has(req.routeOptions.url ?? '')) return;
      throw new CyborgError('request.unauthorized', 'The session cookie is unknown, forged or ended: sign in again.', { reason: 'session_unknown' });
    }
    req.headers['x-auth-token'] = session.token;
    req.browserSession = { id, session };
  });
  // Keystone no longer accepts the session's token (revoked, expired early): the session ends with it.
  scope.addHook('onSend', async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (req.browserSession && reply.statusCode === 401 && !req.identity) {
      sessions.end(req.browserSession.id);
      void reply.header('set-cookie', clearSessionCookie(req));
    }
    return payload;
  });
}
