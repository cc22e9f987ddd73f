import { createServer, connect, type Server, type Socket } from 'node:net';

/** One round trip on one connection: what the client sent up to its Sync (or its simple Query), and how it ended. */
export interface RoundTrip {
  /** The SQL of its Parse and Query messages, in order (a prepared statement run again has none). */
  sql: string[];
  /** Execute and Query messages in it: statements run. */
  statements: number;
  /** The server's transaction status after it (ReadyForQuery): 'I' idle, 'T' in a transaction, 'E' failed. */
  status: string;
}

/**
 * A TCP proxy in front of PostgreSQL that counts what a client makes the server do, by reading
 * both directions of the wire protocol: a round trip is a Sync (extended protocol) or a simple
 * Query, ended by the server's ReadyForQuery; a transaction is committed when a round trip that
 * ran a statement leaves the connection idle (status `I`) — an autocommitted statement or a
 * COMMIT alike. What it counts does not depend on the driver or on timing.
 */
export class CountingProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  readonly trips: RoundTrip[] = [];
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  static forUrl(url: string): CountingProxy {
    const u = new URL(url);
    return new CountingProxy({ host: u.hostname, port: Number(u.port) || 5432 });
  }

  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** Round trips ended since `from` (an index into `trips`). */
  since(from: number): { roundTrips: number; transactions: number; statements: number; trips: RoundTrip[] } {
    const trips = this.trips.slice(from);
    return {
      roundTrips: trips.length,
      transactions: trips.filter((t) => t.statements > 0 && t.status === 'I' && !t.sql.every(isRollback)).length,
      statements: trips.reduce((n, t) => n + t.statements, 0),
      trips,
    };
  }

  async start(): Promise<this> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((ok) => this.server!.listen(0, '127.0.0.1', ok));
    const addr = this.server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    return this;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((ok) => (this.server ? this.server.close(() => ok()) : ok()));
  }

  private accept(client: Socket): void {
    const upstream = connect(this.target);
    this.sockets.add(client).add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    // Round trips sent and not yet answered, oldest first (a client may pipeline them).
    const open: RoundTrip[] = [];
    let current: RoundTrip = { sql: [], statements: 0, status: '' };
    const front = messages(true, (type, body) => {
      if (type === 'P') current.sql.push(cString(body, cString(body, 0).end).text);
      if (type === 'Q') current.sql.push(cString(body, 0).text);
      if (type === 'E' || type === 'Q') current.statements++;
      if (type === 'S' || type === 'Q') {
        open.push(current);
        current = { sql: [], statements: 0, status: '' };
      }
    });
    const back = messages(false, (type, body) => {
      if (type !== 'Z') return;
      const trip = open.shift();
      if (!trip) return; // the startup's ReadyForQuery
      trip.status = String.fromCharCode(body[0]!);
      this.trips.push(trip);
    });
    client.on('data', (b: Buffer) => {
      front(b);
      upstream.write(b);
    });
    upstream.on('data', (b: Buffer) => {
      back(b);
      client.write(b);
    });
  }
}

function isRollback(sql: string): boolean {
  return sql.trim().toLowerCase() === 'rollback';
}

function cString(buf: Buffer, at: number): { text: string; end: number } {
  const nul = buf.indexOf(0, at);
  return { text: buf.subarray(at, nul).toString('utf8'), end: nul + 1 };
}

/**
 * Splits one direction of the stream into whole messages (type, body). The frontend begins with
 * an untyped startup message (or an SSLRequest answered by one byte, which this proxy's clients
 * do not send); the backend's messages are all typed.
 */
function messages(frontend: boolean, onMessage: (type: string, body: Buffer) => void): (chunk: Buffer) => void {
  let buf = Buffer.alloc(0);
  let started = !frontend;
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
      onMessage(String.fromCharCode(buf[0]!), buf.subarray(5, 1 + len));
      buf = buf.subarray(1 + len);
    }
  };
}
