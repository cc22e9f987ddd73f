import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBatch } from '../../api/routes/events.js';
import { buildApi } from '../../api/server.js';
import { silentLogger } from '../../config/logger.js';
import { type Stack, startStack } from '../support/stack.js';
import { readSse, type SseMessage } from './sse.js';
import type { AcceleratorView } from '../../model/index.js';

/**
 * The visualizer's feed, as a client that is not a browser sees it: a snapshot with its cursor,
 * then batches of committed transitions with the views they changed; a reconnect with
 * Last-Event-ID gets what it missed; a cursor that is no longer served is told to reload.
 */
describe('the event stream at /cyborg/v1/events', () => {
  let rt: Stack;
  let app: FastifyInstance;
  let base: string;
  const hangUps: AbortController[] = [];

  beforeAll(async () => {
    rt = await startStack({ hosts: ['stream-1'], fake: { gpus: 2, nics: 0 } });
    app = await buildApi({ control: rt.conductor, log: silentLogger() });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/cyborg/v1`;
  });

  afterAll(async () => {
    for (const h of hangUps) h.abort();
    await app?.close();
    await rt?.stop();
  });

  function open(query = '', headers: Record<string, string> = {}): AsyncGenerator<SseMessage> {
    const h = new AbortController();
    hangUps.push(h);
    return readSse(`${base}/events${query}`, h.signal, headers);
  }

  /** Reads batches until `done` says enough; returns them (bounded by the test's timeout). */
  async function until(stream: AsyncGenerator<SseMessage>, done: (seen: EventBatch[]) => boolean): Promise<{ batches: EventBatch[]; lastId: string }> {
    const batches: EventBatch[] = [];
    let lastId = '';
    for await (const m of stream) {
      if (m.event === 'reset') throw new Error(`unexpected reset ${m.data}`);
      if (m.event !== 'batch') continue;
      batches.push(JSON.parse(m.data) as EventBatch);
      lastId = m.id ?? lastId;
      if (done(batches)) break;
    }
    return { batches, lastId };
  }

  const snapshot = async (): Promise<{ cursor: number; accelerators: AcceleratorView[] }> =>
    (await fetch(`${base}/snapshot`)).json() as Promise<{ cursor: number; accelerators: AcceleratorView[] }>;

  it('follows a snapshot with every committed transition and the view it left', async () => {
    const snap = await snapshot();
    const gpu = snap.accelerators.find((a) => a.deviceType === 'GPU')!;
    expect(gpu.state).toBe('inactive');
    const stream = open(`?cursor=${snap.cursor}`);
    expect((await stream.next()).value).toMatchObject({ event: 'hello' });
    const enabled = rt.conductor.act(gpu.id, { type: 'ENABLE' });
    const { batches } = await until(stream, (bs) => bs.some((b) => b.events.some((e) => e.id === gpu.id && e.to === 'ready')));
    await enabled;
    const steps = batches
      .flatMap((b) => b.events)
      .filter((e) => e.id === gpu.id)
      .map((e) => `${e.from}→${e.to}`);
    expect(steps).toEqual(['inactive→installing', 'installing→ready']);
    const last = batches[batches.length - 1]!;
    expect(last.accelerators[gpu.id]).toMatchObject({ state: 'ready', allowed: expect.arrayContaining(['PROGRAM', 'DISABLE']) });
    expect(last.hosts['stream-1']).toMatchObject({ state: 'online' });
    for (const e of batches.flatMap((b) => b.events)) expect(e.seq).toBeGreaterThan(snap.cursor);
  });

  it('gives a reconnecting client what it missed, by Last-Event-ID, in order', async () => {
    const snap = await snapshot();
    const [a, b] = snap.accelerators.filter((x) => x.state === 'inactive');
    // The client was away while these committed; it comes back with its last id.
    await rt.conductor.act(a!.id, { type: 'ENABLE' });
    await rt.conductor.act(b!.id, { type: 'ENABLE' });
    const stream = open('', { 'last-event-id': String(snap.cursor) });
    const { batches } = await until(stream, (bs) => bs.flatMap((x) => x.events).length >= 4);
    const events = batches.flatMap((x) => x.events);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => snap.cursor + 1 + i));
    expect(events.map((e) => `${e.id === a!.id ? 'a' : 'b'}:${e.to}`)).toEqual(['a:installing', 'a:ready', 'b:installing', 'b:ready']);
  });

  it('tells a client whose cursor is not served (the server restarted) to reload its snapshot', async () => {
    const stream = open('?cursor=999999999');
    expect((await stream.next()).value).toMatchObject({ event: 'hello' });
    const first = await stream.next();
    expect(first.value).toMatchObject({ event: 'reset' });
    expect(JSON.parse((first.value as SseMessage).data)).toEqual({ cursor: rt.conductor.hub.cursor });
  });

  it('sends the transitions committed in one moment as one message', async () => {
    const snap = await snapshot();
    const idle = snap.accelerators.filter((x) => x.state === 'ready');
    expect(idle.length).toBeGreaterThanOrEqual(3);
    const stream = open(`?cursor=${snap.cursor}`);
    expect((await stream.next()).value).toMatchObject({ event: 'hello' }); // connected, live
    // Three programs sent in one go: their first steps commit in the same turn of the event loop.
    const done = Promise.all(idle.slice(0, 3).map((x) => rt.conductor.act(x.id, { type: 'PROGRAM', bitstreamId: 'bs-batch' })));
    const { batches } = await until(stream, (bs) => bs.flatMap((x) => x.events).length >= 6);
    await done;
    expect(batches[0]!.events.filter((e) => e.to === 'programming')).toHaveLength(3);
    expect(
      batches
        .flatMap((x) => x.events)
        .map((e) => e.to)
        .sort(),
    ).toEqual(['programmed', 'programmed', 'programmed', 'programming', 'programming', 'programming']);
  });

  it('tells a client that was away longer than the ring remembers to reload its snapshot', async () => {
    const snap = await snapshot();
    // More events than the hub keeps (10,000) happen while the client is away: heartbeat-level
    // noise from the host, announced through the hub's own API.
    for (let i = 0; i < 10_001; i++) {
      rt.conductor.hub.publish({
        kind: 'host',
        id: 'stream-1',
        host: 'stream-1',
        event: 'HEARTBEAT',
        from: 'online',
        to: 'online',
        at: new Date().toISOString(),
      });
    }
    const stream = open('', { 'last-event-id': String(snap.cursor) });
    expect((await stream.next()).value).toMatchObject({ event: 'hello' });
    const reset = (await stream.next()).value as SseMessage;
    expect(reset.event).toBe('reset');
    expect(reset.id).toBe(String(rt.conductor.hub.cursor));
  });
});
