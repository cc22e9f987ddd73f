import type { Static, TSchema } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { BusError } from '../errors/index.js';
import { PROTOCOL } from '../release/index.js';
import { answer, decodeMessage, errorReply, readReply } from './decode.js';
import { subjectMatches, type Bus, type MessageHandler, type RequestHandler, type RequestOptions, type SubscribeOptions, type Unsubscribe } from './bus.js';

interface Sub {
  pattern: string;
  queue?: string;
  deliver: (raw: string, subject: string, reply?: (raw: string) => void) => void;
}

/**
 * The zero-setup bus for all-in-one mode. Messages cross it as JSON text, exactly as they
 * would cross NATS, so a handler never shares an object with its sender and validation on
 * receipt sees what a remote peer would send.
 */
export class InProcessBus implements Bus {
  // Subscriptions by exact subject, and the few with wildcards apart: matching every
  // subscription of every agent against every message would grow with the fleet.
  private exact = new Map<string, Set<Sub>>();
  private wild = new Set<Sub>();
  private rr = new Map<string, number>();
  private inflight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly log: Logger) {}

  publish<M extends TSchema>(subject: string, _schema: M, msg: Static<M>): void {
    this.dispatch(subject, JSON.stringify(msg));
  }

  subscribe<M extends TSchema>(subject: string, schema: M, handler: MessageHandler<M>, opts: SubscribeOptions = {}): Unsubscribe {
    const sub: Sub = {
      pattern: subject,
      queue: opts.queue,
      deliver: (raw, subj) => {
        const msg = this.decode(schema, raw, subj);
        if (msg === undefined) return;
        this.track(async () => handler(msg as Static<M>, subj), subj);
      },
    };
    return this.add(sub);
  }

  async request<Req extends TSchema, Rep extends TSchema>(
    subject: string,
    _reqSchema: Req,
    repSchema: Rep,
    msg: Static<Req>,
    opts: RequestOptions,
  ): Promise<Static<Rep>> {
    if (this.closed) throw new BusError('bus.no_responder', `bus closed; no responder for ${subject}`, { subject });
    return new Promise<Static<Rep>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new BusError('bus.timeout', `no reply on ${subject} within ${opts.timeoutMs} ms`, { subject })), opts.timeoutMs);
      const delivered = this.dispatch(subject, JSON.stringify(msg), (raw) => {
        clearTimeout(timer);
        try {
          resolve(readReply(JSON.parse(raw), repSchema, subject));
        } catch (err) {
          reject(err);
        }
      });
      if (!delivered) {
        clearTimeout(timer);
        reject(new BusError('bus.no_responder', `no responder for ${subject}`, { subject }));
      }
    });
  }

  respond<Req extends TSchema, Rep extends TSchema>(
    subject: string,
    reqSchema: Req,
    repSchema: Rep,
    handler: RequestHandler<Req, Rep>,
    opts: SubscribeOptions = {},
  ): Unsubscribe {
    const sub: Sub = {
      pattern: subject,
      queue: opts.queue,
      deliver: (raw, subj, reply) => {
        const msg = this.decode(reqSchema, raw, subj);
        if (msg === undefined) {
          reply?.(JSON.stringify(errorReply('bus.invalid_message', `invalid message on ${subj}`)));
          return;
        }
        this.track(async () => {
          const out = await answer(
            () => handler(msg as Static<Req>, subj, PROTOCOL.current),
            repSchema,
            (e) => this.log.error({ err: e, subject: subj }, 'request handler failed'),
          );
          reply?.(JSON.stringify(out));
        }, subj);
      },
    };
    return this.add(sub);
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    this.exact.clear();
    this.wild.clear();
  }

  private add(sub: Sub): Unsubscribe {
    if (/[*>]/.test(sub.pattern)) {
      this.wild.add(sub);
      return () => this.wild.delete(sub);
    }
    let set = this.exact.get(sub.pattern);
    if (!set) this.exact.set(sub.pattern, (set = new Set()));
    set.add(sub);
    return () => {
      set.delete(sub);
      if (set.size === 0 && this.exact.get(sub.pattern) === set) this.exact.delete(sub.pattern);
    };
  }

  private decode(schema: TSchema, raw: string, subject: string): unknown {
    return decodeMessage(schema, () => JSON.parse(raw), subject, this.log);
  }

  /** Runs a handler off the sender's stack, so a throwing handler never reaches the sender. */
  private track(fn: () => Promise<unknown>, subject: string): void {
    const p = Promise.resolve()
      .then(fn)
      .catch((err: unknown) => this.log.error({ err, subject }, 'message handler failed'))
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  /** Delivers to every plain subscriber and to one member of each queue group. */
  private dispatch(subject: string, raw: string, reply?: (raw: string) => void): boolean {
    if (this.closed) return false;
    const groups = new Map<string, Sub[]>();
    let count = 0;
    const exact = this.exact.get(subject);
    const matching = [...(exact ?? [])];
    for (const sub of this.wild) if (subjectMatches(sub.pattern, subject)) matching.push(sub);
    for (const sub of matching) {
      if (sub.queue) {
        const g = groups.get(sub.queue) ?? [];
        g.push(sub);
        groups.set(sub.queue, g);
      } else {
        sub.deliver(raw, subject, reply);
        count++;
      }
    }
    for (const [queue, members] of groups) {
      const n = this.rr.get(queue) ?? 0;
      this.rr.set(queue, n + 1);
      members[n % members.length]!.deliver(raw, subject, reply);
      count++;
    }
    return count > 0;
  }

  /** Test hook: inject raw text on a subject, as a misbehaving peer would. */
  injectRaw(subject: string, raw: string): void {
    this.dispatch(subject, raw);
  }
}
