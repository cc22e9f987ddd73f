import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { CyborgError } from '../errors/index.js';

/**
 * Writes to the operator API per client: at most `perMinute` a minute, counted per authenticated
 * user (Keystone's, or noauth's X-User-Id) and, where there is none, per client address; one more
 * is a 429 with Retry-After. Reads (GET, HEAD: lists are paged, the event stream has its own
 * limits) are not counted. Registered in the operator scope only: health, metrics, version
 * discovery and Nova's v2 calls are never limited. Counted after the route's policy hook, so the
 * user is known and a refused request costs nothing.
 */
export async function limitOperatorWrites(scope: FastifyInstance, perMinute: number): Promise<void> {
  if (perMinute <= 0) return;
  await scope.register(rateLimit, {
    max: perMinute,
    timeWindow: 60_000,
    hook: 'preHandler',
    allowList: (req: FastifyRequest) => req.method === 'GET' || req.method === 'HEAD',
    keyGenerator: (req: FastifyRequest) => {
      const user = req.identity?.userId;
      return user ? `user:${user}` : `ip:${req.ip}`;
    },
    errorResponseBuilder: (_req, ctx) =>
      new CyborgError('request.rate_limited', `more than ${ctx.max} writes a minute from this client; retry in ${ctx.after}`, {
        limit: ctx.max,
        retryAfterS: Math.max(1, Math.ceil(ctx.ttl / 1000)),
      }),
  });
}
