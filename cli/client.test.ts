import { createServer, type Server } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { ApiClient } from './client.js';

/** Listens on the first free port of IRC's 6665–6669, the ports browsers and fetch refuse. */
async function onBlockedPort(): Promise<{ server: Server; port: number }> {
  for (const port of [6665, 6666, 6667, 6668, 6669]) {
    const server = createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path: req.url })));
    const ok = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (ok) return { server, port };
  }
  throw new Error('ports 6665–6669 are all taken here');
}

describe("the CLI's HTTP client", () => {
  let server: Server | undefined;
  afterAll(() => server?.close());

  it("reaches a port fetch refuses, such as Cyborg's own 6666", async () => {
    const s = await onBlockedPort();
    server = s.server;
    await expect(fetch(`http://127.0.0.1:${s.port}/`)).rejects.toThrow();
    const answer = await new ApiClient(`http://127.0.0.1:${s.port}`, 5_000).get<{ path: string }>('/accelerators');
    expect(answer).toEqual({ path: '/cyborg/v1/accelerators' });
  });
});
