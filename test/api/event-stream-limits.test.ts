import { connect, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBatch } from '../../api/routes/events.js';
import { buildApi } from '../../api/server.js';
import { silentLogger } from '../../config/logger.js';
import { eventually } from '../support/eventually.js';
import { type Stack, startStack } from '../support/stack.js';
import { readSse, type SseMessage } from '../e2e/sse.js';

const BUFFER_BYTES = 256 * 1024;
const MAX_CLIENTS = 4;

/**
 * What event-stream clients may cost the api: a client that stops reading is dropped with a last
 * event saying so while the others keep receiving, one client more than the limit is refused, and
 * a resume from further back than a client may replay is told to reload. Memory is read from the
 * server's own accounting (`app.eventStreams`).
 */
describe('event stream limits', () => {
  let rt: Stack;
  let app: FastifyInstance;
  let port: number;
  const hangUps: (() => void)[] = [];

  beforeAll(async () => {
    rt = await startStack({ hosts: ['sse-limits-1'], fake: { gpus: 1, nics: 0 } });
    app = await buildApi({ control: rt.conductor, log: silentLogger(), limits: { sseMaxClients: MAX_CLIENTS, sseBufferBytes: BUFFER_BYTES } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    port = typeof addr === 'object' && addr ? addr.port : 0;
  });

  afterAll(async () => {
    for (const h of hangUps) h();
    await app?.close();
    await rt?.stop();
  });

  const url = (query = ''): string => `http://127.0.0.1:${port}/cyborg/v1/events${query}`;

  function follow(query = ''): AsyncGenerator<SseMessage> {
    const h = new AbortController();
    hangUps.push(() => h.abort());
    return readSse(url(query), h.signal);
  }

  /** A client that sends its request and then never reads: its socket stays paused. */
  async function stalled(): Promise<{ socket: Socket; received: () => string }> {
    const socket = connect(port, '127.0.0.1');
    hangUps.push(() => socket.destroy());
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`GET /cyborg/v1/events HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n`);
    socket.pause();
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    return { socket, received: () => Buffer.concat(chunks).toString('utf8') };
  }

  /** Committed transitions with a long reason, announced through the hub as the conductor does. */
  function burst(count: number): void {
    const reason = 'x'.repeat(1_000);
    for (let i = 0; i < count; i++) {
      rt.conductor.hub.publish({
        kind: 'host',
        id: 'sse-limits-1',
        host: 'sse-limits-1',
        event: 'HEARTBEAT',
        from: 'online',
        to: 'online',
        at: new Date().toISOString(),
        reason,
      });
    }
  }

  it('drops a client that never reads, with a last event saying why, while a reading client gets every event', async () => {
    const reader = follow();
    expect((await reader.next()).value).toMatchObject({ event: 'hello' });
    const from = rt.conductor.hub.cursor;
    const slow = await stalled();
    await eventually(() => app.eventStreams.stats().clients === 2, { what: 'both clients connected' });

    // The reader reads on its own while bursts are committed, until the server gives up on the other.
    const seen: number[] = [];
    let last: number | undefined;
    const reading = (async () => {
      for await (const m of reader) {
        if (m.event === 'dropped') throw new Error(`the reader was dropped: ${m.data}`);
        expect(m.event).not.toBe('reset');
        if (m.event !== 'batch') continue;
        seen.push(...(JSON.parse(m.data) as EventBatch).events.map((e) => e.seq));
        if (last !== undefined && seen.at(-1) === last) return;
      }
    })();
    let published = 0;
    await eventually(
      async () => {
        burst(100);
        published += 100;
        // Let the streams flush before the next burst, as commits spread over time would.
        await new Promise((r) => setTimeout(r, 60));
        return app.eventStreams.stats().dropped === 1;
      },
      { what: 'the stalled client dropped', timeoutMs: 60_000, intervalMs: 1 },
    );
    // One more after the drop, so the reader's last batch comes after it.
    burst(1);
    published += 1;
    last = rt.conductor.hub.cursor;
    await reading;

    // Every event reached the reader, in order, none twice.
    expect(seen).toEqual(Array.from({ length: published }, (_, i) => from + 1 + i));
    // What the server held for the stalled client stayed bounded, far below what was sent to it.
    const sentBytes = published * 1_000;
    const stats = app.eventStreams.stats();
    expect(sentBytes).toBeGreaterThan(16 * BUFFER_BYTES);
    // At most the socket's share and twice the replay allowance of events waiting for it, whatever was sent.
    expect(stats.peakUnreadBytes).toBeLessThanOrEqual(BUFFER_BYTES);
    expect(stats.peakPendingEvents).toBeLessThanOrEqual(2_001);

    // The stalled client, reading at last, finds the reason as the stream's last event.
    slow.socket.resume();
    await eventually(() => slow.socket.readableEnded || slow.socket.destroyed, { what: "the stalled client's stream ended" });
    // The raw bytes are chunked (HTTP/1.1): the event is found, and nothing follows it.
    const raw = slow.received();
    const at = raw.lastIndexOf('event: dropped\ndata: ');
    expect(at).toBeGreaterThan(0);
    expect(raw.slice(at + 1)).not.toContain('event:');
    const data = raw.slice(at).split('\n')[1]!.slice('data: '.length);
    expect(JSON.parse(data)).toMatchObject({ reason: expect.stringContaining('slow reader') });
    // The reader has hung up too: nothing is held for either any more.
    await eventually(() => app.eventStreams.stats().clients === 0, { what: 'both clients forgotten' });
    expect(app.eventStreams.stats()).toMatchObject({ unreadBytes: 0, pendingEvents: 0, dropped: 1 });
  });

  it('refuses one client more than the limit with 503 and Retry-After, and takes one again when a client leaves', async () => {
    const leavers: AbortController[] = [];
    while (app.eventStreams.stats().clients < MAX_CLIENTS) {
      const h = new AbortController();
      leavers.push(h);
      hangUps.push(() => h.abort());
      const stream = readSse(url(), h.signal);
      expect((await stream.next()).value).toMatchObject({ event: 'hello' });
    }
    const refused = await fetch(url(), { headers: { accept: 'text/event-stream' } });
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ code: 'events.too_many_clients', limit: MAX_CLIENTS });
    expect(app.eventStreams.stats().refused).toBe(1);

    leavers[0]!.abort();
    await eventually(() => app.eventStreams.stats().clients === MAX_CLIENTS - 1, { what: 'a client gone' });
    const again = follow();
    expect((await again.next()).value).toMatchObject({ event: 'hello' });
  });

  it('replays a short absence but tells a client further back than it may replay to reload its snapshot', async () => {
    for (const h of hangUps.splice(0)) h();
    await eventually(() => app.eventStreams.stats().clients === 0, { what: 'earlier clients gone' });
    const from = rt.conductor.hub.cursor;
    burst(1_001);
    const far = follow(`?cursor=${from}`);
    expect((await far.next()).value).toMatchObject({ event: 'hello' });
    expect((await far.next()).value).toMatchObject({ event: 'reset', id: String(rt.conductor.hub.cursor) });

    const near = follow(`?cursor=${from + 1}`);
    expect((await near.next()).value).toMatchObject({ event: 'hello' });
    const replayed: number[] = [];
    for await (const m of near) {
      if (m.event !== 'batch') throw new Error(`${m.event}: ${m.data}`);
      replayed.push(...(JSON.parse(m.data) as EventBatch).events.map((e) => e.seq));
      if (replayed.length >= 1_000) break;
    }
    expect(replayed).toEqual(Array.from({ length: 1_000 }, (_, i) => from + 2 + i));
  });
});
