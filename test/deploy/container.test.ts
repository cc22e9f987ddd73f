import { execFile, execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;
const CONTAINERFILE = readFileSync(new URL('Containerfile', `file://${ROOT}`), 'utf8');

/** The container engine of this machine, if one answers (a client alone is not one). */
function engine(): string | undefined {
  for (const e of ['podman', 'docker']) {
    try {
      execFileSync(e, ['info'], { stdio: 'ignore', timeout: 10_000 });
      return e;
    } catch {
      // not installed, or no daemon behind the client
    }
  }
  return undefined;
}
const ENGINE = engine();

/** `node deploy/container/healthcheck.mjs` as the image's HEALTHCHECK runs it. */
async function healthcheck(url: string): Promise<number> {
  try {
    await run(process.execPath, [`${ROOT}deploy/container/healthcheck.mjs`], { env: { CYBORG_HEALTH_URL: url }, timeout: 20_000 });
    return 0;
  } catch (err) {
    return (err as { code: number }).code;
  }
}

describe('the container image as shipped', () => {
  it('runs as a user of its own, listens on every interface, and checks its health on /readyz', () => {
    const final = CONTAINERFILE.slice(CONTAINERFILE.lastIndexOf('\nFROM '));
    expect(final).toMatch(/^USER cyborg$/m);
    expect(final.indexOf('USER cyborg')).toBeLessThan(final.indexOf('ENTRYPOINT'));
    expect(final).toMatch(/^ENV .*CYBORG_LISTEN_ADDRESS=0\.0\.0\.0/m);
    expect(final).toMatch(/^EXPOSE 6666 6680 9180 9181$/m);
    expect(final).toMatch(/^HEALTHCHECK .*CMD \["node", "\/opt\/cyborg\/healthcheck\.mjs"\]$/m);
  });

  it('its health check is 0 on a 200 from /readyz, 1 on a 503 or when nothing answers', async () => {
    let status = 200;
    const server = createServer((_req, res) => res.writeHead(status).end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      expect(await healthcheck(`http://127.0.0.1:${port}/readyz`)).toBe(0);
      status = 503;
      expect(await healthcheck(`http://127.0.0.1:${port}/readyz`)).toBe(1);
    } finally {
      server.close();
    }
    expect(await healthcheck(`http://127.0.0.1:${port}/readyz`)).toBe(1);
  });

  // Here: a Docker client without a daemon. Where an engine answers, the image is built and run.
  it.skipIf(!ENGINE)(
    'no container engine here (podman/docker info fail): where one exists, the image builds and its all-in-one answers /readyz from outside',
    { timeout: 900_000 },
    async () => {
      const e = ENGINE!;
      const tag = `cyborg-test:${process.pid}`;
      await run(e, ['build', '-f', 'Containerfile', '-t', tag, '.'], { cwd: ROOT, timeout: 900_000, maxBuffer: 64 * 1024 * 1024 });
      const { stdout: id } = await run(e, ['run', '-d', '-p', '127.0.0.1::6680', tag, 'all-in-one', '--port', '6680']);
      try {
        const { stdout: mapped } = await run(e, ['port', id.trim(), '6680']);
        const url = `http://${mapped.trim().split('\n')[0]}/readyz`;
        await eventually(async () => (await fetch(url)).status === 200, { what: `${url} answering 200`, timeoutMs: 120_000 });
      } finally {
        await run(e, ['rm', '-f', id.trim()]).catch(() => undefined);
        await run(e, ['rmi', '-f', tag]).catch(() => undefined);
      }
    },
  );
});
