/**
 * Regression (CI of 2026-12-03, the production install): the api role crashed with `TypeError:
 * Cannot read properties of undefined (reading 'length')` in Fastify's preParsing runner. The
 * early listener handed every request to the app the moment Fastify called its `serverFactory`
 * (as the app is constructed), so a `/readyz` poll that arrived while the app was still being
 * built reached a route whose hooks were not arranged yet — and the throw took the process down.
 *
 * Now the factory only keeps the app's handler; the early listener answers (503, naming what the
 * role waits for) until the role calls `open()` after `app.ready()`.
 */
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { listenEarly, type EarlyListener } from '../../roles/early-listener.js';

describe('a request that arrives while the api is being built', () => {
  let early: EarlyListener | undefined;
  afterEach(async () => {
    await early?.close();
  });

  it('is answered by the early listener, not routed into the half-built app; once open, the app answers', async () => {
    early = await listenEarly('127.0.0.1', 0);
    early.waitingFor('the API to be built');
    const app = Fastify({ serverFactory: early.serverFactory });
    app.get('/readyz', async () => ({ status: 'ok' }));
    const url = `http://127.0.0.1:${early.port}`;

    // Constructed, routes declared, not ready: the paths the crash took (a route, and the 404 route).
    for (const path of ['/readyz', '/nowhere']) {
      const res = await fetch(`${url}${path}`);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(JSON.stringify(await res.json())).toContain('waiting for the API to be built');
    }

    await app.ready();
    early.open();
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok' });
    expect((await fetch(`${url}/nowhere`)).status).toBe(404);
    await app.close();
  });

  it('opened before an app was built on it, goes on answering 503', async () => {
    early = await listenEarly('127.0.0.1', 0);
    early.open();
    expect((await fetch(`http://127.0.0.1:${early.port}/readyz`)).status).toBe(503);
  });
});
