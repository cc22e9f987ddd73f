import type { FastifyRequest } from 'fastify';
import { CyborgError } from '../errors/index.js';
import type { RequestMeta } from '../model/index.js';
import { identityHeaderProblem } from './bounds.js';

/**
 * Who asks, as the transition log records it: the request id Fastify gave the request (the
 * client's valid `X-Openstack-Request-Id`, else a new one — api/auth/request-id.ts) and the
 * caller as the identity says — Keystone's user and project ids in keystone mode, the noauth
 * headers otherwise. Nothing a client sends besides what the identity took counts.
 * `fallback` names a caller the identity does not (noauth without `X-User-Id`).
 */
export function requestMeta(req: Pick<FastifyRequest, 'id'> & { identity?: FastifyRequest['identity'] }, fallback = 'operator'): RequestMeta {
  const user = req.identity?.userId ?? fallback;
  const project = req.identity?.projectId ?? undefined;
  // Both land in varchar(255) columns: refused here with a 400 rather than by the database.
  const problem = identityHeaderProblem({ 'x-user-id': user, ...(project ? { 'x-project-id': project } : {}) });
  if (problem) throw new CyborgError('request.invalid', problem, { field: 'headers/x-user-id' });
  const meta: RequestMeta = { requestId: String(req.id), actor: user };
  if (project) meta.projectId = project;
  // Names beside the ids, for people reading the audit: Keystone's, bounded as the ids are.
  const userName = req.identity?.userName;
  const projectName = req.identity?.projectName;
  if (userName && userName.length <= 255) meta.actorName = userName;
  if (projectName && projectName.length <= 255) meta.projectName = projectName;
  return meta;
}
