import { createServer } from 'node:net';

/**
 * A TCP port that is free now, below the ephemeral range so that no client connection takes it
 * meanwhile: for a server the test starts, stops and starts again on the same port.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((ok) => {
      const srv = createServer();
      srv.once('error', () => ok(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => ok(true)));
    });
    if (free) return port;
  }
}
