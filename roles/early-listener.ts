import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { FastifyServerFactory } from 'fastify';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * A role's HTTP listener, bound before the role waits for anything (NATS, the database, a
 * conductor): `/healthz` answers 200 and `/readyz` 503 naming what the role waits for, every other
 * path 503 with `Retry-After`, until the application takes the socket over (`serverFactory`, or
 * `serve`). Before, a role waiting for NATS refused connections, where the README promised 503 —
 * and a port in use was reported only once everything else had started (issue 42).
 */
export interface EarlyListener {
  readonly server: Server;
  readonly port: number;
  /** What the role waits for now: `/readyz` names it (`waiting for <what>`) until the application serves. */
  waitingFor(what: string): void;
  /** Hands every request to `handler` from now on. */
  serve(handler: Handler): void;
  /**
   * For Fastify's `serverFactory`: the app's handler is kept, not served, until `open()` — Fastify
   * calls the factory as it constructs the app, and a request routed before `ready()` finds route
   * contexts half built (an api role that served a /readyz poll then crashed in Fastify's
   * preParsing runner).
   */
  readonly serverFactory: FastifyServerFactory;
  /** Serves the handler the factory was given; call it once the app is ready (before any was given, nothing changes). */
  open(): void;
  /** Stops listening and ends the connections still open (event streams stay open as long as a page does). */
  close(): Promise<void>;
}

export async function listenEarly(address: string, port: number): Promise<EarlyListener> {
  let waiting = 'the role to start';
  let app: Handler | undefined;
  let built: Handler | undefined;
  const starting: Handler = (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const body = (status: number, doc: Record<string, unknown>): void => {
      res.writeHead(status, { 'content-type': 'application/json', ...(status === 503 ? { 'retry-after': '1' } : {}) }).end(JSON.stringify(doc));
    };
    // Alive (a liveness probe must not restart a role that waits), not ready, and saying for what.
    if (path === '/healthz') body(200, { status: 'ok', starting: `waiting for ${waiting}` });
    else if (path === '/readyz') body(503, { status: 'unavailable', checks: { starting: `waiting for ${waiting}` } });
    else body(503, { code: 'service.starting', message: `starting: waiting for ${waiting}` });
  };
  const server = createServer((req, res) => (app ?? starting)(req, res));
  const bound = await bind(server, address, port);
  const serve = (handler: Handler): void => {
    app = handler;
  };
  return {
    server,
    port: bound,
    waitingFor: (what) => {
      waiting = what;
    },
    serve,
    serverFactory: ((handler: Handler) => {
      built = handler;
      return server;
    }) as unknown as FastifyServerFactory,
    open: () => {
      // Before an app was built on it there is nothing to serve: it goes on answering 503.
      if (built) serve(built);
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Listens on `address:port`; the port bound (0: the one the kernel chose). A bind error rejects. */
export async function bind(server: Server, address: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : port;
}
