import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

export interface HealthOptions {
  /** Readiness checks: each returns an error text when not ready. */
  checks?: Record<string, () => Promise<string | undefined> | string | undefined>;
  /** What `/readyz` says beside its checks: the release, schema revision and protocol (roles/release-info.ts). */
  about?: () => { release: string; schema: string; protocol: Record<string, unknown> };
}

const About = {
  release: Type.Optional(Type.String()),
  schema: Type.Optional(Type.String()),
  protocol: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
};

/** `/healthz` says the process is alive; `/readyz` says its dependencies answer. */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthOptions> = async (app, opts) => {
  app.get('/healthz', { schema: { tags: ['health'], response: { 200: Type.Object({ status: Type.Literal('ok') }) } } }, async () => ({
    status: 'ok' as const,
  }));
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        response: {
          200: Type.Object({ status: Type.String(), checks: Type.Record(Type.String(), Type.String()), ...About }),
          503: Type.Object({ status: Type.String(), checks: Type.Record(Type.String(), Type.String()), ...About }),
        },
      },
    },
    async (_req, reply) => {
      const checks: Record<string, string> = {};
      let ok = true;
      for (const [name, check] of Object.entries(opts.checks ?? {})) {
        const err = await Promise.resolve()
          .then(check)
          .catch((e: unknown) => (e instanceof Error ? e.message : String(e)));
        checks[name] = err ?? 'ok';
        if (err) ok = false;
      }
      return reply.status(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable', checks, ...opts.about?.() });
    },
  );
};
