import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  path: string;
  headers: IncomingHttpHeaders;
  body: { events: { name: string; server_uuid: string; tag: string; status: string }[] };
}

/**
 * A real HTTP server standing in for Nova's `/os-server-external-events`: records what Cyborg
 * posts. `failNext(n)` answers the next n requests with 503, to exercise the retry.
 */
export async function startNovaRecorder(): Promise<{ url: string; received: Recorded[]; failNext(n: number): void; close(): Promise<void> }> {
  const received: Recorded[] = [];
  let failures = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (failures > 0) {
        failures--;
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error": "try later"}');
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString()) as Recorded['body'];
      received.push({ path: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ events: body.events.map((e) => ({ ...e, code: 200 })) }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v2.1`,
    received,
    failNext: (n) => {
      failures = n;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
