import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { CyborgError } from '../../errors/index.js';
import { KeystoneSession, openstackDispatcher, ServiceAuthError, type KeystoneToken } from '../../openstack/keystone/index.js';
import { CYBORG_RULES } from '../../policy/index.js';
import { Name, Text } from '../bounds.js';
import { allowed, policy, type AuthSettings } from '../auth/index.js';
import { ErrorSchema } from './shared.js';
import type { RouteScope } from '../plugin.js';

/** Keystone's own bound on a password (`[identity] max_password_length`). */
const PASSWORD_MAX = 4096;
/** Fernet tokens are ~200 characters, JWS ones under 1 KiB: room for both and no more. */
const TOKEN_MAX = 8192;

export const PasswordSignIn = Type.Object(
  {
    username: Name(),
    password: Text(PASSWORD_MAX, { minLength: 1 }),
    project_name: Name(),
    user_domain_name: Type.Optional(Name()),
    project_domain_name: Type.Optional(Name()),
  },
  { additionalProperties: false },
);

export const TokenSignIn = Type.Object({ token: Text(TOKEN_MAX, { minLength: 1, pattern: '^[\\x21-\\x7e]+$' }) }, { additionalProperties: false });

const Ref = Type.Object({
  id: Type.Union([Type.String(), Type.Null()]),
  name: Type.Union([Type.String(), Type.Null()]),
  domain_id: Type.Union([Type.String(), Type.Null()]),
});

const SignedIn = Type.Object({
  token: Type.String(),
  expires_at: Type.String({ description: 'ISO 8601, as Keystone said' }),
  user: Ref,
  project: Ref,
  roles: Type.Array(Type.String()),
});

const WhoAmI = Type.Object({
  strategy: Type.Union([Type.Literal('noauth'), Type.Literal('keystone')]),
  user: Ref,
  project: Ref,
  roles: Type.Array(Type.String()),
  expires_at: Type.Union([Type.String(), Type.Null()]),
  allowed: Type.Array(Type.String(), { description: 'the operator rules (cyborg:operator:*) this identity passes now' }),
});

const Mode = Type.Object({
  strategy: Type.Union([Type.Literal('noauth'), Type.Literal('keystone')]),
  sign_in: Type.Boolean({ description: 'whether clients must sign in (POST auth/tokens) before anything else' }),
  www_authenticate_uri: Type.Optional(Type.String()),
});

/** The operator rules, as whoami reports them (the page shows an action only when its rule is here). */
const OPERATOR_RULES = CYBORG_RULES.map((r) => r.name).filter((n) => n.startsWith('cyborg:operator:'));

function tokenBody(token: string, t: KeystoneToken) {
  return {
    token,
    expires_at: new Date(t.expiresAt).toISOString(),
    user: { id: t.userId, name: t.userName, domain_id: t.userDomainId },
    project: { id: t.projectId, name: t.projectName, domain_id: t.projectDomainId },
    roles: t.roles,
  };
}

export function keystoneOf(auth: AuthSettings) {
  if (auth.strategy !== 'keystone') {
    throw new CyborgError('auth.not_required', 'this api runs with auth strategy noauth: there is nothing to sign in to', { strategy: auth.strategy });
  }
  if (!auth.keystone) throw new CyborgError('internal.error', 'keystone auth strategy without a token validator');
  return auth.keystone;
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** What the routes of authRoutes share, built once per registration. */
function authContext() {
  const dispatcher = openstackDispatcher();
  return { dispatcher };
}

type AuthContext = ReturnType<typeof authContext>;

function getAuthMode(app: RouteScope): void {
  app.get(
    '/auth/mode',
    {
      schema: { tags: ['operator'], summary: 'Whether this api authenticates its callers (keystone) or not (noauth)', response: { 200: Mode } },
    },
    async (req) => {
      const auth = req.server.cyborgAuth;
      if (auth.strategy !== 'keystone') return { strategy: 'noauth' as const, sign_in: false };
      return { strategy: 'keystone' as const, sign_in: true, ...(auth.keystone ? { www_authenticate_uri: auth.keystone.wwwAuthenticateUri } : {}) };
    },
  );
}

function postAuthTokens(app: RouteScope, { dispatcher }: AuthContext): void {
  app.post(
    '/auth/tokens',
    {
      schema: {
        tags: ['operator'],
        summary: "Sign in: a project-scoped Keystone token for a user's password, or a token of one's own checked with Keystone",
        body: Type.Union([PasswordSignIn, TokenSignIn]),
        response: { 201: SignedIn, 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 429: ErrorSchema, 503: ErrorSchema },
      },
    },
    async (req, reply) => {
      const keystone = keystoneOf(req.server.cyborgAuth);
      const refused = (why: string): Error => {
        void reply.header('www-authenticate', `Keystone uri="${keystone.wwwAuthenticateUri}"`);
        return new CyborgError('request.unauthorized', why);
      };
      const body = req.body;
      if ('token' in body) {
        // Keystone unreachable throws its 503 from here: an unanswered check is no refusal.
        const data = await keystone.validator.validate(body.token);
        if (!data) throw refused('Keystone does not accept this token: invalid, expired or revoked.');
        req.log.info({ userId: data.userId, projectId: data.projectId }, 'signed in with a token');
        return reply.status(201).send(tokenBody(body.token, data));
      }
      const session = new KeystoneSession({
        authUrl: keystone.validator.authUrl,
        dispatcher,
        expiryMarginMs: 0,
        auth: {
          type: 'password',
          username: body.username,
          password: body.password,
          userDomainName: body.user_domain_name ?? 'Default',
          projectName: body.project_name,
          projectDomainName: body.project_domain_name ?? 'Default',
        },
      });
      let token: string;
      let data: KeystoneToken;
      try {
        data = await session.tokenData();
        token = await session.token();
      } catch (err) {
        // Keystone's 401 (unknown user, wrong password, no role on the project) and its other
        // refusals alike: the caller learns only that these credentials do not sign in.
        if (err instanceof ServiceAuthError) {
          req.log.info({ username: body.username, project: body.project_name, status: err.httpStatus }, 'sign-in refused by Keystone');
          throw refused('Keystone refused these credentials for this project.');
        }
        throw err;
      }
      // Requests with the new token need not ask Keystone again until the cache's TTL has passed.
      keystone.validator.cache.putValid(token, { ...data, catalog: [] });
      req.log.info({ userId: data.userId, projectId: data.projectId }, 'signed in with a password');
      return reply.status(201).send(tokenBody(token, data));
    },
  );
}

function getAuthWhoami(app: RouteScope): void {
  app.get(
    '/auth/whoami',
    {
      onRequest: policy('cyborg:operator:auth:whoami'),
      schema: {
        tags: ['operator'],
        summary: 'The caller as Keystone tells it, and the operator rules (cyborg:operator:*) it passes',
        response: { 200: WhoAmI, 401: ErrorSchema, 403: ErrorSchema, 503: ErrorSchema },
      },
    },
    async (req) => {
      const auth = req.server.cyborgAuth;
      const id = req.identity;
      const token = header(req, 'x-auth-token');
      // Validated by the policy hook a moment ago: the cache answers.
      const data = auth.strategy === 'keystone' && auth.keystone && token ? await auth.keystone.validator.validate(token) : null;
      const refs = data
        ? tokenBody('', data)
        : {
            user: { id: id.userId, name: id.userName ?? null, domain_id: null },
            project: { id: id.projectId, name: id.projectName ?? null, domain_id: null },
            expires_at: null,
          };
      return {
        strategy: auth.strategy,
        user: refs.user,
        project: refs.project,
        expires_at: refs.expires_at,
        roles: [...id.roles].sort(),
        allowed: OPERATOR_RULES.filter((rule) => allowed(rule, id, auth)),
      };
    },
  );
}

/**
 * Signing in for the visualizer (and any browser client), which cannot talk to Keystone itself:
 * `GET auth/mode` says whether a token is needed (unauthenticated, as Cyborg's discovery
 * documents), `POST auth/tokens` gets a project-scoped token from Keystone for a user's password
 * (or checks a token the user already has) and `GET auth/whoami` names the caller and the
 * operator rules it passes, so a page offers only what the policy allows. Registered in the
 * operator scope, so a sign-in counts as a write against the client's rate limit.
 */
export const authRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const ctx = authContext();
  getAuthMode(app);
  postAuthTokens(app, ctx);
  getAuthWhoami(app);
};
