import type { Static, TSchema } from '@sinclair/typebox';
import type { Msg, MsgHdrs, NatsConnection, NodeConnectionOptions, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { BusError } from '../errors/index.js';
import {
  HOST_HEADER,
  PROTOCOL,
  PROTOCOL_HEADER,
  PROTOCOL_MAX_HEADER,
  ProtocolLevel,
  readProtocol,
  RELEASE,
  RELEASE_HEADER,
  ROLE_HEADER,
} from '../release/index.js';
import { senderOf } from './subjects.js';
import { answer, decodeMessage, errorReply, readReply } from './decode.js';
import { natsAuthError, natsConnectSettings, type NatsAuthSettings, type NatsClient } from './nats-auth.js';
import type { Bus, MessageHandler, RequestHandler, RequestOptions, SubscribeOptions, Unsubscribe } from './bus.js';

/** Counts what the bus drops or fails at, so metrics can expose it (metrics/ provides one). */
export interface BusErrorSink {
  (reason: 'not_json' | 'invalid' | 'handler_failed' | 'bad_reply' | 'request_failed' | 'protocol', subject: string): void;
}

export interface NatsBusOptions {
  /** Prepended to every subject on the wire (`<prefix>.cyborg.…`): isolates tests and deployments. */
  prefix?: string;
  onError?: BusErrorSink;
  /** The bus drains and closes the connection on close() (true when it opened it). */
  ownsConnection?: boolean;
  /** How long close() waits for running handlers (default 5 s). */
  closeGraceMs?: number;
  /** What this process speaks, negotiated from its peers (release/); default: the current protocol, pinned. */
  protocol?: ProtocolLevel;
  /** Who this process is, named in every message's envelope (the roster of upgrade-check). */
  identity?: { role: string; host: string };
}

/** The reply envelope that carries a responder's failure back to the requester (same as InProcessBus). */
const enc = new TextEncoder();

/**
 * The Bus over NATS. Same contract as InProcessBus: JSON on the wire, every message validated
 * against its schema on receipt (malformed or unknown → one log line, dropped, never a crash),
 * request/reply with timeouts, queue groups. Handlers run off the socket's read loop and are
 * tracked so that close() lets them finish before draining the connection.
 */
export class NatsBus implements Bus {
  private subs = new Set<Subscription>();
  private inflight = new Set<Promise<unknown>>();
  private readonly prefix: string;
  private closed = false;
  readonly protocol: ProtocolLevel;
  private readonly envelopes = new Map<number, MsgHdrs>();

  constructor(
    readonly nc: NatsConnection,
    private readonly log: Logger,
    private readonly opts: NatsBusOptions = {},
  ) {
    this.prefix = opts.prefix ? `${opts.prefix}.` : '';
    this.protocol = opts.protocol ?? new ProtocolLevel({ pin: PROTOCOL.current, peerWindowMs: 0 });
  }

  /**
   * The envelope of every message this process sends: the protocol it is written in and the
   * newest this process reads. Headers, not body fields: 0.1.0 reads only the body, so what a
   * new role sends while it speaks protocol 1 is exactly what 0.1.0 reads.
   */
  private envelope(): MsgHdrs {
    // One per protocol spoken, made once: nats.js encodes the headers at each send and changes
    // them only for trace options (never passed here).
    const speaks = this.protocol.speaks();
    const made = this.envelopes.get(speaks);
    if (made) return made;
    const h = natsClient().headers();
    h.set(PROTOCOL_HEADER, String(speaks));
    h.set(PROTOCOL_MAX_HEADER, String(PROTOCOL.current));
    h.set(RELEASE_HEADER, RELEASE);
    if (this.opts.identity) {
      h.set(ROLE_HEADER, this.opts.identity.role);
      h.set(HOST_HEADER, this.opts.identity.host);
    }
    // Never changed once made: written to bytes once, not at every send.
    const impl = h as MsgHdrs & { encode?: () => Uint8Array };
    if (typeof impl.encode === 'function') {
      const bytes = impl.encode();
      impl.encode = () => bytes;
    }
    this.envelopes.set(speaks, h);
    return h;
  }

  /**
   * Reads a received message's envelope: notes what its sender reads (the negotiation), and
   * refuses one written in a protocol this code cannot read (one warn line naming the version
   * and the way out, counted) — never decoded under a guess.
   */
  private opened(m: Msg, subject: string, reply = false): { ok: true; version: number } | { ok: false; message: string } {
    const h = m.headers;
    const get = headerReader(h);
    const written = get(PROTOCOL_HEADER);
    const verdict = readProtocol(written);
    if (!verdict.ok) {
      this.opts.onError?.('protocol', subject);
      this.log.warn({ subject, protocol: verdict.version, code: verdict.code }, `refused a message: ${verdict.message}`);
      return { ok: false, message: verdict.message };
    }
    const max = Number(get(PROTOCOL_MAX_HEADER) || verdict.version);
    const from = senderOf(subject, reply);
    this.protocol.heard({
      role: get(ROLE_HEADER) || from.role,
      host: get(HOST_HEADER) || from.host,
      release: get(RELEASE_HEADER) || (written ? 'unknown' : '0.1.0'),
      reads: Number.isFinite(max) ? max : verdict.version,
      speaks: verdict.version,
      via: subject,
    });
    return { ok: true, version: verdict.version };
  }

  /** The subject as it travels on the wire. */
  wire(subject: string): string {
    return this.prefix + subject;
  }

  publish<M extends TSchema>(subject: string, _schema: M, msg: Static<M>): void {
    if (this.closed) return;
    try {
      this.nc.publish(this.wire(subject), JSON.stringify(msg), { headers: this.envelope() });
    } catch (err) {
      // Publishing while the connection is closing: a report lost is re-sent by its next period.
      this.fail('request_failed', subject, err, 'publish failed');
    }
  }

  /**
   * Publishes a message its sender has already written as JSON (the views publisher weighs each
   * piece to pack them under `max_payload`, and sends the text it weighed instead of writing it
   * again). The text must be what `JSON.stringify` makes of a message of `subject`'s schema.
   */
  publishJson(subject: string, json: string): void {
    if (this.closed) return;
    try {
      this.nc.publish(this.wire(subject), json, { headers: this.envelope() });
    } catch (err) {
      this.fail('request_failed', subject, err, 'publish failed');
    }
  }

  subscribe<M extends TSchema>(subject: string, schema: M, handler: MessageHandler<M>, opts: SubscribeOptions = {}): Unsubscribe {
    return this.listen(subject, opts.queue, (m, subj) => {
      if (!this.opened(m, subj).ok) return;
      const msg = this.decode(schema, m, subj);
      if (msg === undefined) return;
      this.track(async () => handler(msg as Static<M>, subj), subj);
    });
  }

  async request<Req extends TSchema, Rep extends TSchema>(
    subject: string,
    _reqSchema: Req,
    repSchema: Rep,
    msg: Static<Req>,
    opts: RequestOptions,
  ): Promise<Static<Rep>> {
    if (this.closed) throw new BusError('bus.no_responder', `bus closed; no responder for ${subject}`, { subject });
    let m: Msg;
    try {
      m = await this.nc.request(this.wire(subject), JSON.stringify(msg), { timeout: opts.timeoutMs, headers: this.envelope() });
    } catch (err) {
      this.opts.onError?.('request_failed', subject);
      throw toBusError(err, subject, opts.timeoutMs);
    }
    const env = this.opened(m, subject, true);
    if (!env.ok) throw new BusError('bus.protocol_unsupported', `reply on ${subject} refused: ${env.message}`, { subject });
    let parsed: unknown;
    try {
      parsed = m.json();
    } catch {
      this.opts.onError?.('bad_reply', subject);
      throw new BusError('bus.invalid_message', `reply on ${subject} is not JSON`, { subject });
    }
    return readReply(parsed, repSchema, subject, () => this.opts.onError?.('bad_reply', subject));
  }

  respond<Req extends TSchema, Rep extends TSchema>(
    subject: string,
    reqSchema: Req,
    repSchema: Rep,
    handler: RequestHandler<Req, Rep>,
    opts: SubscribeOptions = {},
  ): Unsubscribe {
    return this.listen(subject, opts.queue, (m, subj) => {
      const env = this.opened(m, subj);
      if (!env.ok) {
        reply(m, errorReply('bus.protocol_unsupported', env.message), this.envelope());
        return;
      }
      const msg = this.decode(reqSchema, m, subj);
      if (msg === undefined) {
        reply(m, errorReply('bus.invalid_message', `invalid message on ${subj}`), this.envelope());
        return;
      }
      this.track(async () => {
        reply(
          m,
          await answer(
            () => handler(msg as Static<Req>, subj, env.version),
            repSchema,
            (e) => this.fail('handler_failed', subj, e, 'request handler failed'),
          ),
          this.envelope(),
        );
      }, subj);
    });
  }

  speaks(): number {
    return this.protocol.speaks();
  }

  /** Stops taking messages, lets in-flight handlers finish (and reply), then drains the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    const subs = [...this.subs];
    await Promise.allSettled(subs.map((s) => s.drain()));
    // A handler that never settles must not hold the process forever: give them a bounded grace.
    const grace = new Promise((r) => setTimeout(r, this.opts.closeGraceMs ?? 5_000).unref());
    while (this.inflight.size > 0) {
      const settled = await Promise.race([Promise.allSettled([...this.inflight]).then(() => true), grace.then(() => false)]);
      if (!settled) {
        this.log.warn({ handlers: this.inflight.size }, 'closing with handlers still running');
        break;
      }
    }
    this.closed = true;
    this.subs.clear();
    if (this.opts.ownsConnection && !this.nc.isClosed()) {
      await this.nc.drain().catch((err: unknown) => this.log.warn({ err }, 'NATS drain failed'));
    }
  }

  private listen(subject: string, queue: string | undefined, deliver: (m: Msg, subject: string) => void): Unsubscribe {
    const sub = this.nc.subscribe(this.wire(subject), {
      ...(queue ? { queue } : {}),
      callback: (err, m) => {
        if (err) {
          this.log.warn({ err, subject }, 'subscription error');
          return;
        }
        try {
          deliver(m, m.subject.slice(this.prefix.length));
        } catch (e) {
          this.fail('handler_failed', subject, e, 'message delivery failed');
        }
      },
    });
    this.subs.add(sub);
    // Drained, not cut: a request the server routed here before it heard the unsubscribe is still
    // handled and answered (a role that stops serving — a conductor's restart — loses no call to
    // its caller's timeout), and the queue group's other members take the next ones.
    return () => {
      this.subs.delete(sub);
      if (!sub.isClosed()) sub.drain().catch(() => undefined);
    };
  }

  private decode(schema: TSchema, m: Msg, subject: string): unknown {
    // An empty payload is an empty object: lets an operator `nats req cyborg.svc.… ''`.
    return decodeMessage(schema, () => (m.data.length === 0 ? {} : m.json()), subject, this.log, this.opts.onError);
  }

  private track(fn: () => Promise<unknown>, subject: string): void {
    const p = Promise.resolve()
      .then(fn)
      .catch((err: unknown) => this.fail('handler_failed', subject, err, 'message handler failed'))
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  private fail(reason: Parameters<BusErrorSink>[0], subject: string, err: unknown, text: string): void {
    this.opts.onError?.(reason, subject);
    this.log.error({ err, subject }, text);
  }
}

/**
 * A received envelope's headers by exact name, as `MsgHdrs.get` reads them — from nats.js's own
 * map when it is there: `get` lists and filters every key at each call, five calls a message.
 */
function headerReader(h: MsgHdrs | undefined): (key: string) => string | undefined {
  if (!h) return () => undefined;
  const map = (h as unknown as { headers?: unknown }).headers;
  if (map instanceof Map) return (key) => (map as Map<string, string[]>).get(key)?.[0];
  return (key) => h.get(key);
}

function reply(m: Msg, body: unknown, envelope: MsgHdrs): void {
  if (!m.reply) return;
  try {
    m.respond(enc.encode(JSON.stringify(body)), { headers: envelope });
  } catch {
    // The connection closed under us: the requester times out, which it is ready for.
  }
}

function toBusError(err: unknown, subject: string, timeoutMs: number): BusError {
  const e = err as Error & { isNoResponders?: () => boolean; cause?: unknown };
  const name = (e?.cause as Error | undefined)?.name ?? e?.name;
  if ((typeof e?.isNoResponders === 'function' && e.isNoResponders()) || name === 'NoRespondersError') {
    return new BusError('bus.no_responder', `no responder for ${subject}`, { subject });
  }
  if (name === 'TimeoutError') return new BusError('bus.timeout', `no reply on ${subject} within ${timeoutMs} ms`, { subject });
  return new BusError('bus.no_responder', `request on ${subject} failed: ${e?.message ?? String(err)}`, { subject });
}

/** Between reconnect attempts to one server: a restarted server is found within half a second. */
export const NATS_RECONNECT_WAIT_MS = 500;

export interface ConnectOptions {
  url: string;
  /** The client name the server shows (`cyborg-agent-<host>`, …). */
  name: string;
  /** Credentials and TLS files (config `nats`); credentials in the URL work too. */
  auth?: NatsAuthSettings;
  /** Where replies to this process's requests arrive: an agent's credentials may subscribe only under its own. */
  inboxPrefix?: string;
  log: Logger;
  prefix?: string;
  onError?: BusErrorSink;
  /** Called after each reconnect, e.g. to resync an agent's inventory. */
  onReconnect?: () => void;
  /** What this process speaks (release/ProtocolLevel); default: the current protocol. */
  protocol?: ProtocolLevel;
  identity?: { role: string; host: string };
}

/**
 * Opens a NATS connection that reconnects forever (logging every status change) and wraps it in
 * a NatsBus that owns it. The first connect waits for the server too, so roles can start in any order.
 */
export async function connectBus(opts: ConnectOptions): Promise<NatsBus> {
  const nc = await connectNats(opts.url, opts.auth, {
    name: opts.name,
    pingInterval: 10_000,
    ...(opts.inboxPrefix ? { inboxPrefix: opts.inboxPrefix } : {}),
  });
  const log = opts.log.child({ component: 'nats' });
  log.info({ server: nc.getServer(), connection: opts.name, tls: nc.info?.tls_required === true || undefined }, 'connected to NATS');
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'reconnect') {
        log.warn({ server: s.server }, 'reconnected to NATS');
        opts.onReconnect?.();
      } else if (s.type === 'disconnect') log.warn({ server: s.server }, 'disconnected from NATS; reconnecting');
      // A permission violation lands here too: the server refused one publish or subscription
      // of this process's credentials (deploy/nats/); the connection and the process go on.
      else if (s.type === 'error') log.error({ err: s.error }, 'NATS error');
      else if (s.type === 'slowConsumer') log.error({ subject: s.sub.getSubject(), pending: s.pending }, 'NATS slow consumer: messages may be dropped');
      else if (s.type !== 'ping' && s.type !== 'reconnecting') log.debug({ status: s }, 'NATS status');
    }
  })().catch(() => undefined);
  return new NatsBus(nc, log, {
    prefix: opts.prefix,
    onError: opts.onError,
    ownsConnection: true,
    ...(opts.protocol ? { protocol: opts.protocol } : {}),
    ...(opts.identity ? { identity: opts.identity } : {}),
  });
}

let client: NatsClient | undefined;

/**
 * The NATS client, imported when the first connection opens: the all-in-one runs on the
 * in-process bus and never loads it (~5 MiB of heap and code; issue 43, an all-in-one in 256 MB).
 * A NatsBus exists only over a connection connectNats made, so it is loaded by then.
 */
function natsClient(): NatsClient {
  return client!;
}

/**
 * A NATS connection with this project's policy: reconnect forever (0.5 s apart), wait for a
 * server that is not up yet, credentials and TLS from the config. Credentials the server refuses
 * stop the start with a ConfigError that says NATS authentication (not an endless retry).
 */
export async function connectNats(url: string, auth: NatsAuthSettings | undefined, extra: Partial<NodeConnectionOptions> = {}): Promise<NatsConnection> {
  const settings = natsConnectSettings(url, auth);
  client ??= await import('@nats-io/transport-node');
  try {
    return await client.connect({
      servers: settings.servers,
      maxReconnectAttempts: -1,
      reconnectTimeWait: NATS_RECONNECT_WAIT_MS,
      waitOnFirstConnect: true,
      // Every request would otherwise build two Error objects up front (their stack traces are the
      // "async trace" of a later failure): CPU and garbage on every request of a fleet's cold start.
      // Our failures carry the subject (BusError), which says more than that stack.
      noAsyncTraces: true,
      ...settings.options,
      ...(settings.authenticator ? { authenticator: settings.authenticator(client) } : {}),
      ...extra,
    });
  } catch (err) {
    throw natsAuthError(err, settings) ?? err;
  }
}
