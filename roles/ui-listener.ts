import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { bind } from './early-listener.js';

export interface UiListener {
  url: string;
  close(): Promise<void>;
}

/**
 * The api role's second listener: the same application (every route, hook and the visualizer)
 * on a port browsers open. Cyborg's 6666, where Nova and the catalog expect the API, is on the
 * Fetch standard's list of ports browsers refuse (config/ports.ts). `app` must be ready.
 */
export async function startUiListener(app: FastifyInstance, address: string, port: number, log: Logger): Promise<UiListener> {
  const server: Server = createServer((req, res) => app.routing(req, res));
  const bound = await bind(server, address, port);
  const host = address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
  log.info({ url: `${url}/ui` }, `visualizer: open ${url}/ui in a browser (browsers refuse the API's own port)`);
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Event streams stay open for as long as a page does: close them with the listener.
        server.closeAllConnections();
      }),
  };
}
