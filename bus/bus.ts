import type { Static, TSchema } from '@sinclair/typebox';

/**
 * Handler of a request: its return value is the reply. Throwing replies with an error.
 * `written`: the protocol the request is written in (its envelope's; in-process: the current one).
 */
export type RequestHandler<Req extends TSchema, Rep extends TSchema> = (
  msg: Static<Req>,
  subject: string,
  written: number,
) => Promise<Static<Rep>> | Static<Rep>;

export type MessageHandler<M extends TSchema> = (msg: Static<M>, subject: string) => void | Promise<void>;

export interface SubscribeOptions {
  /** Queue group: each message goes to one member of the group (NATS semantics). */
  queue?: string;
}

export interface RequestOptions {
  timeoutMs: number;
}

/** Stops a subscription or a responder. */
export type Unsubscribe = () => void;

/**
 * The message bus between agents, conductors and API processes. Two implementations: in-process
 * (all-in-one, tests) and NATS. Both validate every message on receipt against the schema named
 * by the caller; a malformed message is logged and dropped, never crashes the process.
 */
export interface Bus {
  publish<M extends TSchema>(subject: string, schema: M, msg: Static<M>): void;
  subscribe<M extends TSchema>(subject: string, schema: M, handler: MessageHandler<M>, opts?: SubscribeOptions): Unsubscribe;
  request<Req extends TSchema, Rep extends TSchema>(
    subject: string,
    reqSchema: Req,
    repSchema: Rep,
    msg: Static<Req>,
    opts: RequestOptions,
  ): Promise<Static<Rep>>;
  respond<Req extends TSchema, Rep extends TSchema>(
    subject: string,
    reqSchema: Req,
    repSchema: Rep,
    handler: RequestHandler<Req, Rep>,
    opts?: SubscribeOptions,
  ): Unsubscribe;
  /** Lets in-flight handlers finish, then closes. */
  close(): Promise<void>;
  /** The protocol this process writes its messages in now (release/ProtocolLevel); absent: the current one. */
  speaks?(): number;
}

/** NATS-style subject matching: `*` one token, `>` one or more trailing tokens. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
