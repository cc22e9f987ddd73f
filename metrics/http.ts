import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.js';

type Check = () => { ok: boolean; [k: string]: unknown };

export interface HealthServer {
  server: Server;
  port: number;
  close(): Promise<void>;
  /** What the role waits for while it starts: `/readyz` is 503 naming it until `serve`. */
  waitingFor(what: string): void;
  /** The role is up: its own checks answer from now on. */
  serve(checks: { healthy: Check; ready?: Check }): void;
}

/**
 * The small HTTP listener of the agent and conductor roles: `GET /healthz` (200 while `healthy()`
 * says so, else 503, with its details), `GET /readyz` (the same with `ready()`, which says whether
 * the role can serve now — its database answers — and defaults to `healthy()`) and `GET /metrics`
 * (Prometheus text). Port 0 picks a free one.
 */
export async function startHealthServer(opts: {
  address: string;
  port: number;
  metrics: Metrics;
  /** Absent while the role starts (it listens before it waits for NATS or its database): alive, not ready, saying for what. */
  healthy?: Check;
  ready?: Check;
  log: Logger;
}): Promise<HealthServer | undefined> {
  let waiting = 'the role to start';
  let checks: { healthy: Check; ready?: Check } | undefined = opts.healthy
    ? { healthy: opts.healthy, ...(opts.ready ? { ready: opts.ready } : {}) }
    : undefined;
  const starting = (path: string): { ok: boolean; [k: string]: unknown } => ({ ok: path === '/healthz', starting: `waiting for ${waiting}` });
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.writeHead(405).end();
    } else if (path === '/healthz' || path === '/readyz') {
      const h = !checks ? starting(path) : path === '/readyz' && checks.ready ? checks.ready() : checks.healthy();
      res.writeHead(h.ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: h.ok ? 'ok' : 'unavailable', ...h }));
    } else if (path === '/metrics') {
      opts.metrics.text().then(
        (text) => res.writeHead(200, { 'content-type': opts.metrics.registry.contentType }).end(text),
        (err: unknown) => {
          opts.log.error({ err }, 'metrics collection failed');
          res.writeHead(500).end();
        },
      );
    } else {
      res.writeHead(404).end();
    }
  });
  // An optional listener must never take its role down: a port already taken (a conductor and an
  // agent on one host, both told to use it) is said in the log and the role goes on without it.
  const err = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    server.once('error', resolve);
    server.listen(opts.port, opts.address, () => resolve(undefined));
  });
  if (err) {
    opts.log.warn(
      { address: opts.address, port: opts.port, err: err.code ?? err.message },
      'health and metrics listener could not bind; going on without it (set another metrics port)',
    );
    return undefined;
  }
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  opts.log.info({ address: opts.address, port }, 'health and metrics listener up (/healthz, /metrics)');
  return {
    server,
    port,
    close: () => new Promise((r) => server.close(() => r())),
    waitingFor: (what) => {
      waiting = what;
    },
    serve: (c) => {
      checks = c;
    },
  };
}

/** `GET /metrics` on a Fastify app (the api role, the all-in-one). */
export function metricsRoute(app: FastifyInstance, metrics: Metrics): void {
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    void reply.header('content-type', metrics.registry.contentType);
    return metrics.text();
  });
}
