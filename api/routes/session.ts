import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CyborgError } from '../../errors/index.js';
import { KeystoneSession, openstackDispatcher, ServiceAuthError, undici, type AuthMethod, type KeystoneToken } from '../../openstack/keystone/index.js';
import { clearSessionCookie, crossSiteReason, policy, sessionCookie, type BrowserSession, type BrowserSessions, type KeystoneAuth } from '../auth/index.js';
import { keystoneOf, PasswordSignIn, TokenSignIn } from './auth.js';
import { ErrorSchema } from './shared.js';
import type { RouteScope } from '../plugin.js';

/** Keystone's own bound on a password (`[identity] max_password_length`). */
const PASSWORD_MAX = 4096;

const Ref = Type.Object({ id: Type.Union([Type.String(), Type.Null()]), name: Type.Union([Type.String(), Type.Null()]) });

const SessionView = Type.Object({
  expires_at: Type.String({ description: "ISO 8601: when Keystone's token, and so the session, ends; renew before it" }),
  user: Ref,
  project: Ref,
  renewable: Type.Boolean({ description: "whether POST auth/session/renew can extend it with the user's password" }),
});

const Renew = Type.Object({ password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX }) }, { additionalProperties: false });

function view(s: BrowserSession) {
  return {
    expires_at: new Date(s.expiresAt).toISOString(),
    user: { id: s.userId, name: s.userName },
    project: { id: s.projectId, name: s.projectName },
    renewable: s.userName !== null && s.projectId !== null,
  };
}

/** A token for a password, from Keystone; its refusal is a 401 that tells nothing more. */
async function passwordToken(
  keystone: KeystoneAuth,
  auth: AuthMethod,
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<{ token: string; data: KeystoneToken }> {
  const session = new KeystoneSession({ authUrl: keystone.validator.authUrl, dispatcher, expiryMarginMs: 0, auth });
  try {
    const data = await session.tokenData();
    const token = await session.token();
    // The next requests with this token need not ask Keystone again until the cache's TTL has passed.
    keystone.validator.cache.putValid(token, { ...data, catalog: [] });
    return { token, data };
  } catch (err) {
    if (!(err instanceof ServiceAuthError)) throw err;
    req.log.info({ user: auth.type === 'password' ? auth.username : undefined, status: err.httpStatus }, 'browser sign-in refused by Keystone');
    void reply.header('www-authenticate', `Keystone uri="${keystone.wwwAuthenticateUri}"`);
    throw new CyborgError('request.unauthorized', 'Keystone refused these credentials for this project.');
  }
}

/** Signing out revokes a token the api asked for (the user's own pasted token is only forgotten). */
async function revoke(keystone: KeystoneAuth, s: BrowserSession, req: FastifyRequest): Promise<void> {
  if (s.obtained !== 'password') return;
  try {
    const { request } = await undici();
    const res = await request(`${keystone.validator.authUrl}/auth/tokens`, {
      method: 'DELETE',
      dispatcher: await dispatcher(),
      headers: { 'x-auth-token': s.token, 'x-subject-token': s.token },
      signal: AbortSignal.timeout(30_000),
    });
    await res.body.dump();
  } catch (err) {
    // The session is over here either way; the token then lives until Keystone's expiry.
    req.log.warn({ err: (err as Error).message }, "could not revoke a signed-out session's token");
  }
}

const dispatcher = openstackDispatcher();

/** What the routes of sessionRoutes share, built once per registration. */
function sessionContext(opts: { sessions: BrowserSessions }) {
  const { sessions } = opts;
  return { opts, sessions };
}

type SessionContext = ReturnType<typeof sessionContext>;

function postAuthSession(app: RouteScope, { sessions }: SessionContext): void {
  app.post(
    '/auth/session',
    {
      schema: {
        tags: ['operator'],
        summary: 'Sign a browser in: a session cookie (HttpOnly, SameSite=Strict) for a password or a token; the token stays with the api',
        body: Type.Union([PasswordSignIn, TokenSignIn]),
        response: { 201: SessionView, 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema, 429: ErrorSchema, 503: ErrorSchema },
      },
    },
    async (req, reply) => {
      const keystone = keystoneOf(req.server.cyborgAuth);
      // A sign-in posted by another site's page would sign the victim in as the attacker (login CSRF).
      const why = crossSiteReason(req);
      if (why) throw new CyborgError('request.forbidden', `Sign in from this api's own page: ${why}.`, { reason: 'cross_site' });
      const body = req.body;
      let made: { id: string; session: BrowserSession };
      if ('token' in body) {
        const data = await keystone.validator.validate(body.token);
        if (!data) {
          void reply.header('www-authenticate', `Keystone uri="${keystone.wwwAuthenticateUri}"`);
          throw new CyborgError('request.unauthorized', 'Keystone does not accept this token: invalid, expired or revoked.');
        }
        made = sessions.create(body.token, data, 'token');
      } else {
        const { token, data } = await passwordToken(
          keystone,
          {
            type: 'password',
            username: body.username,
            password: body.password,
            userDomainName: body.user_domain_name ?? 'Default',
            projectName: body.project_name,
            projectDomainName: body.project_domain_name ?? 'Default',
          },
          req,
          reply,
        );
        made = sessions.create(token, data, 'password');
      }
      req.log.info({ userId: made.session.userId, projectId: made.session.projectId, sessions: sessions.size }, 'browser session started');
      void reply.header('set-cookie', sessionCookie(made.id, (made.session.expiresAt - Date.now()) / 1000, req.protocol === 'https'));
      return reply.status(201).send(view(made.session));
    },
  );
}

function postAuthSessionRenew(app: RouteScope, { sessions }: SessionContext): void {
  app.post(
    '/auth/session/renew',
    {
      onRequest: policy('cyborg:operator:auth:whoami'),
      schema: {
        tags: ['operator'],
        summary: "Renew the browser session before Keystone's token expires: the user's password again, for a new token of the same user and project",
        body: Renew,
        response: { 200: SessionView, 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 409: ErrorSchema, 429: ErrorSchema, 503: ErrorSchema },
      },
    },
    async (req, reply) => {
      const keystone = keystoneOf(req.server.cyborgAuth);
      const current = req.browserSession;
      if (!current) throw new CyborgError('request.unauthorized', 'Renewing needs the session cookie: sign in first.');
      const s = current.session;
      if (!s.userName || !s.projectId) throw new CyborgError('request.forbidden', "This session's token names no user or project to renew for: sign in again.");
      const { token, data } = await passwordToken(
        keystone,
        {
          type: 'password',
          username: s.userName,
          password: req.body.password,
          ...(s.userDomainId ? { userDomainId: s.userDomainId } : { userDomainName: 'Default' }),
          projectId: s.projectId,
        },
        req,
        reply,
      );
      const renewed = sessions.renew(current.id, token, data)!;
      // Not waited for: Keystone takes seconds to record a revocation, the page need not.
      void revoke(keystone, s, req);
      req.log.info({ userId: renewed.userId, expiresAt: new Date(renewed.expiresAt).toISOString() }, 'browser session renewed');
      void reply.header('set-cookie', sessionCookie(current.id, (renewed.expiresAt - Date.now()) / 1000, req.protocol === 'https'));
      return view(renewed);
    },
  );
}

function deleteAuthSession(app: RouteScope, { sessions }: SessionContext): void {
  app.delete(
    '/auth/session',
    {
      schema: {
        tags: ['operator'],
        summary: 'Sign the browser out: the session ends here and the token it held is revoked',
        response: { 204: Type.Null(), 403: ErrorSchema },
      },
    },
    async (req, reply) => {
      const current = req.browserSession;
      if (current) {
        sessions.end(current.id);
        const auth = req.server.cyborgAuth;
        if (auth.strategy === 'keystone' && auth.keystone) void revoke(auth.keystone, current.session, req);
        req.log.info({ userId: current.session.userId }, 'browser session ended');
      }
      void reply.header('set-cookie', clearSessionCookie(req));
      return reply.status(204).send(null);
    },
  );
}

/**
 * The visualizer's session (docs/visualizer.md): `POST auth/session` signs in (a password or a
 * token, as `POST auth/tokens`) and answers with an HttpOnly, SameSite=Strict cookie instead of
 * the token, which stays in the api's memory; every operator route then takes the cookie
 * (installBrowserSessions, on the operator scope). `POST auth/session/renew` trades the password for a new
 * token before the old one expires; `DELETE auth/session` ends it here and revokes the token.
 */
export const sessionRoutes: FastifyPluginAsyncTypebox<{ sessions: BrowserSessions }> = async (app, opts) => {
  const ctx = sessionContext(opts);
  postAuthSession(app, ctx);
  postAuthSessionRenew(app, ctx);
  deleteAuthSession(app, ctx);
};
