/**
 * The door of api/auth/, who is asking and what they may do: the caller's identity (Keystone's
 * answer about the token, or noauth's headers), the policy applied to it, the browser's session
 * cookie, request ids, and the settings built from the configuration. api/v2/, api/routes/ and
 * the roles take these from here, by name.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { CYBORG_RULE_NAMES } from '../../policy/index.js';
import { identify, noauthOperator, type AuthSettings } from './identity.js';
import { authorize } from './policy.js';
import { CyborgError } from '../../errors/index.js';

export { BrowserSessions, clearSessionCookie, crossSiteReason, installBrowserSessions, sessionCookie, type BrowserSession } from './browser-session.js';
export { hasServiceToken, identify, type AuthSettings, type Identity, type KeystoneAuth } from './identity.js';
export { allowed, authorize, requireServiceToken, type RuleName } from './policy.js';
export { installRequestIds, isRequestId, requestId } from './request-id.js';
export { apiAuthFromConfig, keystoneAuthFromConfig, loadEnforcer, watchPolicyReload, type ApiAuth } from './setup.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Identity strategy and policy of this API (decorated on the root by installAuth). */
    cyborgAuth: AuthSettings;
  }
}

/** Makes the API's identity settings and policy reachable from every route's hooks. */
export function installAuth(app: FastifyInstance, auth: AuthSettings): void {
  app.decorate('cyborgAuth', auth);
}

/**
 * An operator route's `onRequest` hook: who is asking (Keystone's answer about the token in
 * keystone mode; in noauth an admin, as before) and whether the named rule lets them. 401 /
 * 503 come from the identity, 403 names the rule. The rule must be registered (checked when
 * the route is declared, so a typo fails at start-up, not on the first request).
 */
export function policy(rule: string): onRequestAsyncHookHandler {
  if (!CYBORG_RULE_NAMES.has(rule)) throw new CyborgError('internal.error', `policy rule "${rule}" is not registered in policy/cyborg-rules.ts`);
  return async function checkPolicy(this: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const auth = req.server.cyborgAuth;
    if (!auth) throw new CyborgError('internal.error', 'installAuth() was not called on this API');
    req.identity = auth.strategy === 'keystone' ? await identify(req, auth, reply) : noauthOperator(req);
    authorize(rule, req.identity, auth);
  };
}
