import { Agent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with one request instead of just forwarding it. */
export type Fault = { answer: number; body: unknown } | { holdMs: number };

/** The request a policy judges: its method and path, and its number among all requests and among writes (both from 1). */
export interface Seen {
  method: string;
  path: string;
  n: number;
  /** Its number among PUT, POST, PATCH and DELETE requests; 0 for a read. */
  write: number;
}

/** Chooses a fault for a request, or none (forwarded as it came). */
export type FaultPolicy = (r: Seen) => Fault | null;

const WRITES = new Set(['PUT', 'POST', 'PATCH', 'DELETE']);

/**
 * A small HTTP proxy in front of Placement that answers some requests itself (a 409, a 500)
 * without forwarding them, or holds them before forwarding, as its policy says; everything else
 * goes to Placement unchanged. It counts what it saw and what it injected, so a bench can set
 * our client's count against the wire's.
 */
export class FaultProxy {
  requests = 0;
  writes = 0;
  /** Answered by the proxy itself (never reached Placement). */
  answered = 0;
  /** Held before being forwarded. */
  held = 0;
  /** Forwarded but Placement's answer never came (connection refused or reset): the proxy's own faults, which a run must show as 0. */
  upstreamErrors: string[] = [];
  private server: Server | null = null;
  private inFlight = 0;
  private lastDone = 0;
  // Keep-alive to Placement as our client's own fetch does: the proxy adds no connection setup per request.
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });

  constructor(
    private readonly upstream: string,
    private readonly policy: FaultPolicy,
  ) {}

  get faults(): number {
    return this.answered + this.held;
  }

  /** Listens on a free loopback port; resolves with the URL to give our client. */
  async start(): Promise<string> {
    const server = (this.server = createServer((req, res) => void this.handle(req, res)));
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /**
   * Resolves once no request has been in flight for `quietMs` (or after `maxMs`): a stopped sync
   * may still be finishing its pass (the stale-provider sweep of its last hosts comes after they
   * say in_sync), and cutting those off would count as faults of the proxy's own.
   */
  async quiet(quietMs: number, maxMs: number): Promise<void> {
    const end = performance.now() + maxMs;
    while (performance.now() < end && (this.inFlight > 0 || performance.now() - this.lastDone < quietMs)) {
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    server?.closeAllConnections();
    if (server) await new Promise<void>((ok) => server.close(() => ok()));
    this.agent.destroy();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const isWrite = WRITES.has(method);
    const seen: Seen = { method, path: req.url ?? '/', n: ++this.requests, write: isWrite ? ++this.writes : 0 };
    this.inFlight++;
    res.on('close', () => {
      this.inFlight--;
      this.lastDone = performance.now();
    });
    const body = await drain(req);
    const fault = this.policy(seen);
    if (fault && 'answer' in fault) {
      this.answered++;
      const text = JSON.stringify(fault.body);
      res.writeHead(fault.answer, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    if (fault) {
      this.held++;
      await new Promise((r) => setTimeout(r, fault.holdMs));
    }
    this.forward(req, body, res);
  }

  private forward(req: IncomingMessage, body: Buffer, res: ServerResponse): void {
    const up = new URL(req.url ?? '/', this.upstream);
    const out = request(up, { method: req.method, headers: { ...req.headers, host: up.host }, agent: this.agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    // Placement gone (or the client gave up and closed): the client sees no answer, as it would.
    out.on('error', (err: NodeJS.ErrnoException) => {
      this.upstreamErrors.push(`${req.method} ${req.url}: ${err.code ?? ''} ${err.message}`);
      res.destroy();
    });
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    out.end(body);
  }
}

function drain(req: IncomingMessage): Promise<Buffer> {
  return new Promise((ok, fail) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => ok(Buffer.concat(parts)));
    req.on('error', fail);
  });
}
