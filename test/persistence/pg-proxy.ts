import { createServer, connect, type Server, type Socket } from 'node:net';

interface Pair {
  client: Socket;
  upstream: Socket;
  held: Buffer[];
  stalled: Buffer[] | null;
}

/**
 * A TCP proxy in front of PostgreSQL that a test can cut (the database "goes away": every
 * connection is reset and new ones are refused), hold (server replies are buffered, so a COMMIT
 * cannot complete), stall a COMMIT (the next `COMMIT` and whatever its connection sends after it
 * stay in the proxy: the server never sees them, so that transaction stays open with its locks)
 * and count statements on (it reads the frontend protocol: each simple Query and each
 * extended-protocol Execute is one statement). The shared server is never touched.
 */
export class PgProxy {
  private server: Server | null = null;
  private readonly pairs = new Set<Pair>();
  private down = false;
  private holding = false;
  private stalling = false;
  statements = 0;
  /** COMMITs kept from the server now. */
  stalledCommits = 0;
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
    for (const p of this.pairs) {
      p.client.resetAndDestroy();
      p.upstream.destroy();
    }
    this.pairs.clear();
    this.stalledCommits = 0;
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

  /** The next `COMMIT` sent as a simple query, on any connection, is kept from the server with what follows it. */
  stallNextCommit(): void {
    this.stalling = true;
  }

  /** Sends a stalled COMMIT (and what followed it) on; stalls no more. */
  releaseCommit(): void {
    this.stalling = false;
    this.stalledCommits = 0;
    for (const p of this.pairs) {
      const msgs = p.stalled ?? [];
      p.stalled = null;
      if (msgs.length > 0) p.upstream.write(Buffer.concat(msgs));
    }
  }

  /** Resets the connection whose COMMIT is stalled (that one alone: the database stays up). */
  cutStalled(): void {
    this.stalling = false;
    this.stalledCommits = 0;
    for (const p of this.pairs) {
      if (!p.stalled) continue;
      p.client.resetAndDestroy();
      p.upstream.destroy();
      this.pairs.delete(p);
    }
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((ok) => (this.server ? this.server.close(() => ok()) : ok()));
  }

  private accept(client: Socket): void {
    if (this.down) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(this.target);
    const pair: Pair = { client, upstream, held: [], stalled: null };
    this.pairs.add(pair);
    const drop = (): void => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    upstream.on('data', (b: Buffer) => (this.holding ? pair.held.push(b) : client.write(b)));
    // What a chunk carries goes on in one write, as it came (small writes would meet Nagle's delay).
    let out: Buffer[] = [];
    const read = frontendMessages((type, msg) => {
      if (type === 'Q' || type === 'E') this.statements++;
      if (!pair.stalled && this.stalling && type === 'Q' && queryText(msg) === 'commit') {
        pair.stalled = [];
        this.stalling = false;
        this.stalledCommits++;
      }
      if (pair.stalled) pair.stalled.push(msg);
      else out.push(msg);
    });
    client.on('data', (b: Buffer) => {
      read(b);
      if (out.length > 0) upstream.write(Buffer.concat(out));
      out = [];
    });
  }
}

/** The text of a simple Query message, trimmed and lower-cased. */
function queryText(msg: Buffer): string {
  return msg
    .subarray(5, msg.length - 1)
    .toString('utf8')
    .trim()
    .toLowerCase();
}

/**
 * Splits the frontend stream into whole messages: first the untyped startup message (type ''),
 * then typed ones. A message split across chunks is held until it is complete.
 */
function frontendMessages(onMessage: (type: string, msg: Buffer) => void): (chunk: Buffer) => void {
  let buf = Buffer.alloc(0);
  let started = false;
  return (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      if (!started) {
        if (buf.length < 4) return;
        const len = buf.readInt32BE(0);
        if (buf.length < len) return;
        onMessage('', buf.subarray(0, len));
        buf = buf.subarray(len);
        started = true;
        continue;
      }
      if (buf.length < 5) return;
      const len = buf.readInt32BE(1);
      if (buf.length < 1 + len) return;
      onMessage(String.fromCharCode(buf[0]!), buf.subarray(0, 1 + len));
      buf = buf.subarray(1 + len);
    }
  };
}
