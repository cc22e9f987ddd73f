import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyBaseLogger } from 'fastify';
import type { ServerResponse } from 'node:http';
import { AcceleratorSchema } from './accelerators.js';
import { HostSchema } from './hosts.js';
import { TransitionEvent, type ControlPlane, type EventBatch, type StreamEvent } from '../../model/index.js';
import { Name } from '../bounds.js';
import { jsonObjectStream } from '../stream-list.js';
import { policy } from '../auth/index.js';
import { EventScope, scopeOf } from '../scope.js';
import { CyborgError } from '../../errors/index.js';
import type { RouteScope } from '../plugin.js';
import { withPeopleNames } from '../names.js';

export type { EventBatch, StreamEvent } from '../../model/index.js';

export interface EventStreamOptions {
  control: ControlPlane;
  /** At most one message per this many ms (a page gets ≤ 1000/flushMs messages/s); the first after a quiet spell goes at once. */
  flushMs?: number;
  /** A ping this often keeps proxies from closing a quiet stream and tells the page it is alive. */
  keepAliveMs?: number;
  /**
   * Most events one client may cost: a resume (Last-Event-ID / `?cursor=`) further back is told to
   * reload the snapshot (`event: reset`) instead of replayed, and a client whose socket is full
   * while this many events wait for it is dropped.
   */
  maxBacklog?: number;
  /** Most clients at once (config `api.sseMaxClients`); one more is answered 503 with Retry-After. */
  maxClients?: number;
  /** Bytes a client may leave unread in its socket's buffer (config `api.sseBufferBytes`); more and it is dropped. */
  bufferBytes?: number;
  /** How long a dropped client has to read its final event before its socket is destroyed. */
  dropGraceMs?: number;
  /** The accounting of the open streams; `buildApi` shares it as `app.eventStreams`. */
  streams?: EventStreams;
}

export const SSE_DEFAULTS = { maxClients: 200, bufferBytes: 1_048_576, maxBacklog: 1_000, dropGraceMs: 5_000 } as const;

/**
 * What the open event streams cost this process, counted by the server itself: how many, how many
 * bytes their sockets hold unread, how many events wait for a full socket, and the most either
 * ever reached for one client (what a slow reader could make this process hold).
 */
export class EventStreams {
  readonly open = new Set<BatchedStream>();
  refused = 0;
  dropped = 0;
  peakUnreadBytes = 0;
  peakPendingEvents = 0;

  stats(): {
    clients: number;
    refused: number;
    dropped: number;
    unreadBytes: number;
    pendingEvents: number;
    peakUnreadBytes: number;
    peakPendingEvents: number;
  } {
    let unreadBytes = 0;
    let pendingEvents = 0;
    for (const s of this.open) {
      unreadBytes += s.unreadBytes;
      pendingEvents += s.pendingEvents;
    }
    return {
      clients: this.open.size,
      refused: this.refused,
      dropped: this.dropped,
      unreadBytes,
      pendingEvents,
      peakUnreadBytes: this.peakUnreadBytes,
      peakPendingEvents: this.peakPendingEvents,
    };
  }

  /** Ends every stream (the server is closing): hijacked streams are invisible to Fastify's close. */
  closeAll(): void {
    for (const s of this.open) s.close();
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The open event streams and what they cost (api/routes/events.ts). */
    eventStreams: EventStreams;
  }
}

const TransitionSchema = Type.Omit(TransitionEvent, ['seq']);
const ArqSchema = Type.Object({ uuid: Type.String(), state: Type.String() }, { additionalProperties: true });

/** What the routes of eventRoutes share, built once per registration. */
function eventContext(opts: EventStreamOptions) {
  const { control } = opts;
  const streams = opts.streams ?? new EventStreams();
  const limits = { ...SSE_DEFAULTS, ...defined(opts) };
  return { opts, control, streams, limits };
}

type EventContext = ReturnType<typeof eventContext>;

function getSnapshot(app: RouteScope, { control }: EventContext): void {
  app.get(
    '/snapshot',
    {
      onRequest: policy('cyborg:operator:event:snapshot'),
      schema: {
        tags: ['operator'],
        summary: 'Everything the visualizer shows, with the event cursor it matches',
        response: {
          200: Type.Object({
            cursor: Type.Integer(),
            hosts: Type.Array(HostSchema),
            accelerators: Type.Array(AcceleratorSchema),
            arqs: Type.Array(ArqSchema),
          }),
        },
      },
    },
    async (req, reply) => {
      const scope = scopeOf(req);
      const cursor = control.hub.cursor;
      const [hosts, accelerators, arqs] = scope.fleet
        ? [control.listHosts(), control.listAccelerators(), control.listArqs()]
        : [
            control.listHosts().flatMap((h) => scope.host(h) ?? []),
            control.listAccelerators().flatMap((a) => scope.accelerator(a) ?? []),
            control.listArqs().flatMap((a) => scope.arq(a) ?? []),
          ];
      // The whole fleet's state, streamed as the client reads it (api/stream-list.ts): a slow or
      // stuck visualizer holds references, not a copy of the text. Each item as its schema says.
      const as = (schema: TSchema): ((x: never) => string) => reply.compileSerializationSchema(schema) as (x: never) => string;
      return reply.type('application/json; charset=utf-8').send(
        jsonObjectStream({
          cursor: { value: cursor },
          hosts: { items: hosts, toText: as(HostSchema) },
          accelerators: { items: accelerators, toText: as(AcceleratorSchema) },
          arqs: { items: arqs, toText: as(ArqSchema) },
        }) as never,
      ); // a stream of the schema's JSON, serialized item by item above
    },
  );
}

function getHistoryOne(app: RouteScope, { control }: EventContext): void {
  app.get(
    '/history/:id',
    {
      onRequest: policy('cyborg:operator:event:history'),
      schema: {
        tags: ['operator'],
        summary: 'The committed transition log of one accelerator, ARQ or host (oldest first)',
        params: Type.Object({ id: Name() }),
        querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) }, { additionalProperties: false }),
        response: { 200: Type.Object({ transitions: Type.Array(TransitionSchema) }) },
      },
    },
    async (req) => {
      // Outside the caller's scope an id has no history, as an unknown one.
      const scope = scopeOf(req);
      if (!scope.seesHistoryOf(control, req.params.id)) return { transitions: [] };
      // Names after the redaction: a row redacted of who asked is not looked up.
      return {
        transitions: await withPeopleNames(
          req,
          (await control.history(req.params.id, req.query.limit ?? 200)).map((t) => scope.redact(t)),
        ),
      };
    },
  );
}

function getEvents(app: RouteScope, { opts, control, streams, limits }: EventContext): void {
  app.get(
    '/events',
    {
      onRequest: policy('cyborg:operator:event:stream'),
      schema: {
        tags: ['operator'],
        summary: 'Server-Sent Events: committed transitions, batched, resumable by Last-Event-ID or ?cursor=',
        querystring: Type.Object({ cursor: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })) }, { additionalProperties: false }),
      },
    },
    async (req, reply) => {
      const header = req.headers['last-event-id'];
      const fromHeader = typeof header === 'string' && /^\d+$/.test(header) ? Number(header) : undefined;
      const cursor = fromHeader ?? req.query.cursor;
      if (streams.open.size >= limits.maxClients) {
        streams.refused++;
        throw new CyborgError('events.too_many_clients', `the event stream serves ${limits.maxClients} clients at once; retry later`, {
          limit: limits.maxClients,
          retryAfterS: 5,
        });
      }
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      res.write('retry: 1000\n\n');
      const stream = new BatchedStream(res, control, new EventScope(scopeOf(req), control), limits, streams, opts, req.log);
      streams.open.add(stream);
      // Counted until its connection is gone (a dropped client's socket may still hold its last bytes).
      const gone = (): void => {
        stream.stop();
        streams.open.delete(stream);
      };
      req.raw.once('close', gone);
      res.socket?.once('close', gone);
      stream.start(cursor);
    },
  );
}

/**
 * `GET /events`: Server-Sent Events carrying every committed transition of accelerators, ARQs
 * and hosts (liveness), batched. Resumable: the SSE id is the hub's sequence number, so a
 * browser's automatic reconnect (Last-Event-ID) or `?cursor=` continues where it stopped; when
 * the hub's ring no longer holds that cursor the stream first sends `event: reset` and the client
 * reloads `GET /snapshot`, which returns the full committed state with the cursor it matches.
 */
export const eventRoutes: FastifyPluginAsyncTypebox<EventStreamOptions> = async (app, opts) => {
  const ctx = eventContext(opts);
  app.addHook('preClose', async () => ctx.streams.closeAll());
  getSnapshot(app, ctx);
  getHistoryOne(app, ctx);
  getEvents(app, ctx);
};

/** The most events one SSE message carries. */
const MAX_MESSAGE_EVENTS = 200;

type Limits = { -readonly [K in keyof typeof SSE_DEFAULTS]: number };

function defined(opts: EventStreamOptions): Partial<Limits> {
  const out: Partial<Limits> = {};
  for (const k of Object.keys(SSE_DEFAULTS) as (keyof Limits)[]) if (opts[k] !== undefined) out[k] = opts[k];
  return out;
}

/**
 * One client's stream: buffers hub events and writes them as one SSE message per flush. What it
 * may hold is bounded: at most `maxBacklog` events wait for a full socket, and a socket holding
 * more than `bufferBytes` unread is not written to again: the client gets `event: dropped` and
 * its socket is closed (destroyed if it does not read even that).
 */
class BatchedStream {
  private buffer: StreamEvent[] = [];
  private unsubscribe: () => void = () => undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private lastFlushAt = 0;
  private keepAlive: NodeJS.Timeout | undefined;
  private last = 0;
  private draining = false;
  private ended = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly control: ControlPlane,
    private readonly scope: EventScope,
    private readonly limits: Limits,
    private readonly streams: EventStreams,
    private readonly opts: EventStreamOptions,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Bytes written to this client that its socket has not sent yet. */
  get unreadBytes(): number {
    return this.res.writableLength;
  }

  get pendingEvents(): number {
    return this.buffer.length;
  }

  start(cursor: number | undefined): void {
    const hub = this.control.hub;
    // Subscribe before reading the backlog; seq numbers drop whatever arrives twice.
    this.unsubscribe = hub.subscribe((ev) => {
      const seen = this.scope.event(ev);
      if (seen) this.push({ ...seen, committedAt: Date.now() });
    });
    this.last = hub.cursor;
    // Says the stream is open and where the server is; a client may ignore it.
    this.write(`event: hello\ndata: ${JSON.stringify({ cursor: hub.cursor })}\n\n`);
    if (cursor !== undefined) {
      // A cursor beyond ours comes from before a restart (seq numbers start again); one further
      // back than a client may replay costs more than the snapshot: both reload.
      if (cursor > hub.cursor || hub.cursor - cursor > this.limits.maxBacklog) this.reset();
      else {
        const backlog = hub.since(cursor);
        if (!backlog.complete) this.reset();
        else {
          this.last = cursor;
          const now = Date.now();
          this.buffer.unshift(
            ...backlog.events.flatMap((e) => {
              const seen = this.scope.event(e);
              return seen ? [{ ...seen, committedAt: now }] : [];
            }),
          );
          this.flush();
        }
      }
    }
    // An event, not a comment: EventSource hides comments, and the page's watchdog needs to see it.
    // A socket that is already full needs no keep-alive, only the check that it is not stuck.
    this.keepAlive = setInterval(() => {
      if (this.res.writableNeedDrain) this.checkUnread();
      else this.write('event: ping\ndata: {}\n\n');
    }, this.opts.keepAliveMs ?? 15_000);
  }

  stop(): void {
    this.unsubscribe();
    clearTimeout(this.flushTimer);
    clearInterval(this.keepAlive);
    this.buffer = [];
  }

  /** The server is closing: end the stream as it is. */
  close(): void {
    this.stop();
    this.ended = true;
    this.res.end();
  }

  private push(ev: StreamEvent): void {
    if (this.ended) return;
    this.buffer.push(ev);
    if (this.buffer.length > this.streams.peakPendingEvents) this.streams.peakPendingEvents = this.buffer.length;
    // A replay is at most maxBacklog: only a socket that does not take what it is sent lets as
    // many again gather.
    if (this.buffer.length > 2 * this.limits.maxBacklog) {
      this.drop(`slow reader: more than ${2 * this.limits.maxBacklog} events waiting for the socket`);
      return;
    }
    if (this.flushTimer || this.draining) return;
    // Throttle, not delay: after a quiet spell the batch goes out as soon as this turn of the
    // event loop has committed what it will (one setTimeout 0); under load, once per flushMs.
    const wait = Math.max(0, this.lastFlushAt + (this.opts.flushMs ?? 50) - Date.now());
    this.flushTimer = setTimeout(() => this.flush(), wait);
  }

  /** Tells the client its cursor is gone: it must reload the snapshot (whose cursor is current). */
  private reset(): void {
    this.buffer = [];
    this.last = this.control.hub.cursor;
    this.write(`id: ${this.last}\nevent: reset\ndata: ${JSON.stringify({ cursor: this.last })}\n\n`);
  }

  private flush(): void {
    this.flushTimer = undefined;
    this.lastFlushAt = Date.now();
    if (this.draining || this.ended) return;
    if (!this.checkUnread()) return;
    const events = this.buffer.filter((e) => e.seq > this.last);
    this.buffer = [];
    // A message carries at most MAX_MESSAGE_EVENTS and at most half of `bufferBytes` (fewer events
    // when they are large); a socket gets no more while what it holds and the message would pass
    // `bufferBytes`. The rest waits for 'drain', up to maxBacklog events: a reader that keeps up is
    // never dropped, one that does not costs at most `bufferBytes` and maxBacklog events.
    let i = 0;
    while (i < events.length) {
      let n = Math.min(MAX_MESSAGE_EVENTS, events.length - i);
      let text = this.message(events.slice(i, i + n));
      while (n > 1 && Buffer.byteLength(text) > this.limits.bufferBytes / 2) {
        n = Math.ceil(n / 2);
        text = this.message(events.slice(i, i + n));
      }
      const unread = this.res.writableLength;
      if (unread > 0 && unread + Buffer.byteLength(text) > this.limits.bufferBytes) {
        this.buffer = events.slice(i);
        this.draining = true;
        const resume = (): void => {
          this.draining = false;
          this.flush();
        };
        // 'drain' comes only after a write the socket refused; otherwise it is taking it now.
        if (this.res.writableNeedDrain) this.res.once('drain', resume);
        else setImmediate(resume);
        return;
      }
      this.last = events[i + n - 1]!.seq;
      this.write(text);
      i += n;
    }
  }

  private message(events: StreamEvent[]): string {
    return `id: ${events[events.length - 1]!.seq}\nevent: batch\ndata: ${JSON.stringify(this.batch(events))}\n\n`;
  }

  /** Writes one message unless the stream has ended; keeps the peak of what a socket held. */
  private write(message: string): void {
    if (this.ended) return;
    this.res.write(message);
    const unread = this.res.writableLength;
    if (unread > this.streams.peakUnreadBytes) this.streams.peakUnreadBytes = unread;
  }

  /** False (and the client dropped) when its socket holds more unread than it may. */
  private checkUnread(): boolean {
    const unread = this.res.writableLength;
    if (unread <= this.limits.bufferBytes) return true;
    this.drop(`slow reader: ${unread} bytes unread (the limit is ${this.limits.bufferBytes})`);
    return false;
  }

  /**
   * Stops feeding a client that does not keep up: its last event says why and where it stopped
   * (a client reconnects and reloads the snapshot); a socket that will not take even that is
   * destroyed, so what it held is freed.
   */
  private drop(reason: string): void {
    if (this.ended) return;
    this.stop();
    this.streams.dropped++;
    this.log.warn({ reason, cursor: this.last }, 'event stream client dropped');
    this.res.write(`event: dropped\ndata: ${JSON.stringify({ reason, cursor: this.last })}\n\n`);
    this.ended = true;
    // The connection goes too (not kept alive for another request): once the last event is sent,
    // or when the grace is over whatever it still holds.
    const socket = this.res.socket;
    this.res.end(() => socket?.end());
    setTimeout(() => socket?.destroy(), this.limits.dropGraceMs).unref();
  }

  private batch(events: StreamEvent[]): EventBatch {
    const b: EventBatch = { cursor: events[events.length - 1]!.seq, events, accelerators: {}, hosts: {}, arqs: {} };
    for (const e of events) {
      // Views as the client's scope shows them (api/scope.ts): a project sees its own part only.
      const s = this.scope;
      if (e.kind === 'accelerator') b.accelerators[e.id] ??= s.accelerator(orNull(() => this.control.getAccelerator(e.id)));
      else if (e.kind === 'host') b.hosts[e.id] ??= s.host(orNull(() => this.control.getHost(e.id)));
      else b.arqs[e.id] ??= s.arq(orNull(() => this.control.getArq(e.id)));
      // A host's first registration is no transition (it starts online): its accelerators bring it.
      if (e.host && e.kind !== 'host' && s.scope.fleet) b.hosts[e.host] ??= orNull(() => this.control.getHost(e.host!));
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
