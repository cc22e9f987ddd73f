/**
 * Issue 42: a role started while NATS was down did not listen at all (connection refused on
 * `/readyz`), where the README says 503. Now every role binds its listener before it waits for
 * anything: `/healthz` 200 (alive), `/readyz` 503 naming what it waits for, the API's other routes
 * 503 with Retry-After. And the all-in-one says a port in use at once, not after its database.
 */
import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { cyborgProcess, startCyborg, type Running } from '../cli/spawn.js';

/** A port nothing listens on: one the kernel just handed out and took back. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const get = async (url: string): Promise<{ status: number; body: Record<string, unknown>; retryAfter: string | null }> => {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, retryAfter: res.headers.get('retry-after') };
};

describe('every role listens for /healthz and /readyz before it waits for NATS', () => {
  const running: Running[] = [];
  afterAll(async () => {
    await Promise.all(running.map((r) => r.kill()));
  });

  it('api, conductor and agent: alive, not ready, naming NATS at its URL', async () => {
    const nats = `nats://127.0.0.1:${await freePort()}`;
    const [api, conductor, agent] = await Promise.all([freePort(), freePort(), freePort()]);
    running.push(
      startCyborg(['api', '--nats', nats, '--port', String(api)]),
      // A conductor needs its database; in memory only when named (issue 39): it then waits for NATS alone.
      startCyborg(['conductor', '--nats', nats, '--metrics-port', String(conductor)], { env: { DATABASE_URL: 'memory://' } }),
      startCyborg(['agent', '--nats', nats, '--metrics-port', String(agent), '--host', 'waiting-host']),
    );
    const waiting = `waiting for NATS at ${nats} ([DEFAULT] transport_url)`;
    // Each in its listener's own form: the API's checks, the health listener's fields.
    for (const [port, ready] of [
      [api, { checks: { starting: waiting } }],
      [conductor, { starting: waiting }],
      [agent, { starting: waiting }],
    ] as const) {
      const base = `http://127.0.0.1:${port}`;
      // Up at once, then through its steps (an agent opens its cache first) to the wait for NATS.
      await expect.poll(async () => JSON.stringify((await get(`${base}/readyz`).catch(() => undefined))?.body), { timeout: 30_000 }).toContain(waiting);
      expect(await get(`${base}/readyz`)).toMatchObject({ status: 503, body: { status: 'unavailable', ...ready } });
      expect(await get(`${base}/healthz`)).toMatchObject({ status: 200, body: { status: 'ok', starting: waiting } });
    }
    // The API's own routes: 503, come back in a second.
    expect(await get(`http://127.0.0.1:${api}/cyborg/v1/accelerators`)).toEqual({
      status: 503,
      retryAfter: '1',
      body: { code: 'service.starting', message: `starting: ${waiting}` },
    });
  });

  it('the all-in-one says a port in use before it opens its database', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => taken.once('listening', r));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await cyborgProcess(['all-in-one', '--port', String(port)]);
      expect(r.code).toBe(5);
      expect(r.stderr).toBe(`cyborg: --port = ${port}: 127.0.0.1:${port} is in use by another process; stop it or set another port\n`);
      expect(r.stdout).not.toMatch(/embedded|migrat/);
    } finally {
      taken.close();
    }
  });
});
