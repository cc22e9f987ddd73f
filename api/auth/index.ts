import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { CYBORG_RULE_NAMES } from '../../policy/index.js';
import { identify, noauthOperator, type AuthSettings } from '../v2/identity.js';
import { authorize } from '../v2/policy.js';

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
  if (!CYBORG_RULE_NAMES.has(rule)) throw new Error(`policy rule "${rule}" is not registered in policy/cyborg-rules.ts`);
  return async function checkPolicy(this: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const auth = req.server.cyborgAuth;
    if (!auth) throw new Error('installAuth() was not called on this API');
    req.identity = auth.strategy === 'keystone' ? await identify(req, auth, reply) : noauthOperator(req);
    authorize(rule, req.identity, auth);
  };
}
