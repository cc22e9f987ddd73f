import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that a test can cut (the database "goes away": every
 * connection is reset and new ones are refused), hold (server replies are buffered, so a COMMIT
 * cannot complete) and count statements on (it reads the frontend protocol: each simple Query
 * and each extended-protocol Execute is one statement). The shared server is never touched.
 */
export class PgProxy {
  private server: Server | null = null;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket; held: Buffer[] }>();
  private down = false;
  private holding = false;
  statements = 0;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  static forUrl(url: string): PgProxy {
    const u = new URL(url);
    return new PgProxy({ host: u.hostname, port: Number(u.port) || 5432 });
  }

  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  async start(): Promise<this> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((ok) => this.server!.listen(this.port, '127.0.0.1', ok));
    const addr = this.server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    return this;
  }

  /** The database goes away: open connections are reset, new ones refused until `restore()`. */
  cut(): void {
    this.down = true;
    for (const p of this.pairs) { p.client.resetAndDestroy(); p.upstream.destroy(); }
    this.pairs.clear();
  }

  restore(): void {
    this.down = false;
  }

  /** Buffers the server's replies (queries run, but nobody hears back) until `release()`. */
  hold(): void {
    this.holding = true;
  }

  release(): void {
    this.holding = false;
    for (const p of this.pairs) for (const b of p.held.splice(0)) p.client.write(b);
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((ok) => (this.server ? this.server.close(() => ok()) : ok()));
  }

  private accept(client: Socket): void {
    if (this.down) { client.resetAndDestroy(); return; }
    const upstream = connect(this.target);
    const pair = { client, upstream, held: [] as Buffer[] };
    this.pairs.add(pair);
    const drop = (): void => { this.pairs.delete(pair); client.destroy(); upstream.destroy(); };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    upstream.on('data', (b: Buffer) => (this.holding ? pair.held.push(b) : client.write(b)));
    const counter = frontendCounter(() => this.statements++);
    client.on('data', (b: Buffer) => { counter(b); upstream.write(b); });
  }
}

/** Parses the frontend stream: first the untyped startup message, then typed messages. */
function frontendCounter(onStatement: () => void): (chunk: Buffer) => void {
  let buf = Buffer.alloc(0);
  let started = false;
  return (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      if (!started) {
        if (buf.length < 4) return;
        const len = buf.readInt32BE(0);
        if (buf.length < len) return;
        buf = buf.subarray(len);
        started = true;
        continue;
      }
      if (buf.length < 5) return;
      const len = buf.readInt32BE(1);
      if (buf.length < 1 + len) return;
      const type = String.fromCharCode(buf[0]!);
      if (type === 'Q' || type === 'E') onStatement();
      buf = buf.subarray(1 + len);
    }
  };
}
