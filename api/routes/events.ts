import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { ServerResponse } from 'node:http';
import { AcceleratorSchema } from './accelerators.js';
import { HostSchema } from './hosts.js';
import { TransitionEvent, type AcceleratorView, type ArqView, type CommittedEvent, type ControlPlane, type HostView } from '../../model/index.js';
import { Name } from '../bounds.js';
import { policy } from '../auth/index.js';

/** A committed event as the stream sends it: stamped with when the API saw its commit. */
export type StreamEvent = CommittedEvent & { committedAt: number };

/**
 * One SSE message: the events committed since the last one, in commit order, and the current
 * committed view of everything they touched (so the page needs no extra request per event).
 * A view of `null` means the object is gone (a deleted ARQ, a removed accelerator).
 */
export interface EventBatch {
  cursor: number;
  events: StreamEvent[];
  accelerators: Record<string, AcceleratorView | null>;
  hosts: Record<string, HostView | null>;
  arqs: Record<string, ArqView | null>;
}

export interface EventStreamOptions {
  control: ControlPlane;
  /** At most one message per this many ms (a page gets ≤ 1000/flushMs messages/s); the first after a quiet spell goes at once. */
  flushMs?: number;
  /** A ping this often keeps proxies from closing a quiet stream and tells the page it is alive. */
  keepAliveMs?: number;
  /** A client this many events behind (a stalled socket) is told to reload instead of buffered forever. */
  maxBacklog?: number;
}

const TransitionSchema = Type.Omit(TransitionEvent, ['seq']);
const ArqSchema = Type.Object({ uuid: Type.String(), state: Type.String() }, { additionalProperties: true });

/**
 * `GET /events`: Server-Sent Events carrying every committed transition of accelerators, ARQs
 * and hosts (liveness), batched. Resumable: the SSE id is the hub's sequence number, so a
 * browser's automatic reconnect (Last-Event-ID) or `?cursor=` continues where it stopped; when
 * the hub's ring no longer holds that cursor the stream first sends `event: reset` and the client
 * reloads `GET /snapshot`, which returns the full committed state with the cursor it matches.
 */
export const eventRoutes: FastifyPluginAsyncTypebox<EventStreamOptions> = async (app, opts) => {
  const { control } = opts;
  const open = new Set<ServerResponse>();
  // Hijacked streams are invisible to Fastify's close: end them first, or close would wait forever.
  app.addHook('preClose', async () => {
    for (const res of open) res.end();
  });

  app.get('/snapshot', {
    onRequest: policy('cyborg:operator:event:snapshot'),
    schema: {
      tags: ['operator'], summary: 'Everything the visualizer shows, with the event cursor it matches',
      response: {
        200: Type.Object({
          cursor: Type.Integer(),
          hosts: Type.Array(HostSchema),
          accelerators: Type.Array(AcceleratorSchema),
          arqs: Type.Array(ArqSchema),
        }),
      },
    },
  }, async () => ({ cursor: control.hub.cursor, hosts: control.listHosts(), accelerators: control.listAccelerators(), arqs: control.listArqs() }));

  app.get('/history/:id', {
    onRequest: policy('cyborg:operator:event:history'),
    schema: {
      tags: ['operator'], summary: 'The committed transition log of one accelerator, ARQ or host (oldest first)',
      params: Type.Object({ id: Name() }),
      querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) }, { additionalProperties: false }),
      response: { 200: Type.Object({ transitions: Type.Array(TransitionSchema) }) },
    },
  }, async (req) => ({ transitions: await control.history(req.params.id, req.query.limit ?? 200) }));

  app.get('/events', {
    onRequest: policy('cyborg:operator:event:stream'),
    schema: {
      tags: ['operator'], summary: 'Server-Sent Events: committed transitions, batched, resumable by Last-Event-ID or ?cursor=',
      querystring: Type.Object({ cursor: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })) }, { additionalProperties: false }),
    },
  }, async (req, reply) => {
    const header = req.headers['last-event-id'];
    const fromHeader = typeof header === 'string' && /^\d+$/.test(header) ? Number(header) : undefined;
    const cursor = fromHeader ?? req.query.cursor;
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 1000\n\n');
    open.add(res);
    const stream = new BatchedStream(res, control, opts);
    stream.start(cursor);
    req.raw.on('close', () => {
      stream.stop();
      open.delete(res);
    });
  });
};

/** One client's stream: buffers hub events and writes them as one SSE message per flush. */
class BatchedStream {
  private buffer: StreamEvent[] = [];
  private unsubscribe: () => void = () => undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private lastFlushAt = 0;
  private keepAlive: NodeJS.Timeout | undefined;
  private last = 0;
  private draining = false;

  constructor(private readonly res: ServerResponse, private readonly control: ControlPlane, private readonly opts: EventStreamOptions) {}

  start(cursor: number | undefined): void {
    const hub = this.control.hub;
    // Subscribe before reading the backlog; seq numbers drop whatever arrives twice.
    this.unsubscribe = hub.subscribe((ev) => this.push({ ...ev, committedAt: Date.now() }));
    this.last = hub.cursor;
    // Says the stream is open and where the server is; a client may ignore it.
    this.res.write(`event: hello\ndata: ${JSON.stringify({ cursor: hub.cursor })}\n\n`);
    if (cursor !== undefined) {
      const backlog = hub.since(cursor);
      // A cursor beyond ours comes from before a restart (seq numbers start again): reload too.
      if (!backlog.complete || cursor > hub.cursor) this.reset();
      else {
        this.last = cursor;
        const now = Date.now();
        this.buffer.unshift(...backlog.events.map((e) => ({ ...e, committedAt: now })));
        this.flush();
      }
    }
    // An event, not a comment: EventSource hides comments, and the page's watchdog needs to see it.
    this.keepAlive = setInterval(() => this.res.write('event: ping\ndata: {}\n\n'), this.opts.keepAliveMs ?? 15_000);
  }

  stop(): void {
    this.unsubscribe();
    clearTimeout(this.flushTimer);
    clearInterval(this.keepAlive);
  }

  private push(ev: StreamEvent): void {
    this.buffer.push(ev);
    if (this.buffer.length > (this.opts.maxBacklog ?? 50_000)) {
      this.reset();
      return;
    }
    if (this.flushTimer) return;
    // Throttle, not delay: after a quiet spell the batch goes out as soon as this turn of the
    // event loop has committed what it will (one setTimeout 0); under load, once per flushMs.
    const wait = Math.max(0, this.lastFlushAt + (this.opts.flushMs ?? 50) - Date.now());
    this.flushTimer = setTimeout(() => this.flush(), wait);
  }

  /** Tells the client its cursor is gone: it must reload the snapshot (whose cursor is current). */
  private reset(): void {
    this.buffer = [];
    this.last = this.control.hub.cursor;
    this.res.write(`id: ${this.last}\nevent: reset\ndata: ${JSON.stringify({ cursor: this.last })}\n\n`);
  }

  private flush(): void {
    this.flushTimer = undefined;
    this.lastFlushAt = Date.now();
    if (this.draining) return;
    // A socket that cannot take more waits for 'drain'; events gather (up to maxBacklog) meanwhile.
    if (this.res.writableNeedDrain) {
      this.draining = true;
      this.res.once('drain', () => {
        this.draining = false;
        this.flush();
      });
      return;
    }
    const events = this.buffer.filter((e) => e.seq > this.last);
    this.buffer = [];
    if (events.length === 0) return;
    this.last = events[events.length - 1]!.seq;
    this.res.write(`id: ${this.last}\nevent: batch\ndata: ${JSON.stringify(this.batch(events))}\n\n`);
  }

  private batch(events: StreamEvent[]): EventBatch {
    const b: EventBatch = { cursor: this.last, events, accelerators: {}, hosts: {}, arqs: {} };
    for (const e of events) {
      if (e.kind === 'accelerator') b.accelerators[e.id] ??= orNull(() => this.control.getAccelerator(e.id));
      else if (e.kind === 'host') b.hosts[e.id] ??= orNull(() => this.control.getHost(e.id));
      else b.arqs[e.id] ??= orNull(() => this.control.getArq(e.id));
      // A host's first registration is no transition (it starts online): its accelerators bring it.
      if (e.host && e.kind !== 'host') b.hosts[e.host] ??= orNull(() => this.control.getHost(e.host!));
    }
    return b;
  }
}

function orNull<T>(read: () => T): T | null {
  try {
    return read();
  } catch {
    return null;
  }
}
