import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Catalogue } from './catalogue.js';
import { apiRoot, type LinkSettings } from './links.js';
import { authorize, type AuthSettings, type RuleName } from '../auth/index.js';
import type { ControlPlane } from '../../model/index.js';
import type { ApiLimits } from '../limits.js';
import { requestMeta } from '../request-meta.js';

/** What every v2 resource plugin is given. */
export interface V2Deps {
  control: ControlPlane;
  auth: AuthSettings;
  /** Public endpoint, proxy trust and the mount this copy of the routes is served under. */
  links: LinkSettings;
  catalogue: Catalogue;
  /** The unversioned copies of the routes stay out of the OpenAPI document. */
  hide?: boolean;
  /** What one request may cost (config `api`). */
  limits: Pick<ApiLimits, 'maxArqsPerRequest' | 'pageMax'>;
}

/** Per-request helpers bound to the deps. */
export function helpers(deps: V2Deps) {
  return {
    authorize: (req: FastifyRequest, rule: RuleName) => authorize(rule, req.identity, deps.auth),
    base: (req: FastifyRequest) => apiRoot(req, deps.links),
    /** ARQs of other projects are invisible to a non-admin (CVE-2026-40214). */
    projectScope: (req: FastifyRequest): string | undefined => (req.identity.isAdmin ? undefined : (req.identity.projectId ?? '')),
    meta: (req: FastifyRequest) => requestMeta(req, 'anonymous'),
  };
}

/** Answers with a status and no body (Cyborg's 202 / 204 / 200 of enable and disable). */
export function empty(reply: FastifyReply, status: number): FastifyReply {
  return reply.status(status).send();
}
