import { connect, createServer, type Server, type Socket } from 'node:net';

interface Pair {
  client: Socket;
  upstream: Socket | null;
  /** Bytes the partition keeps from the server / from the client, in order. */
  toServer: Buffer[];
  toClient: Buffer[];
  clientGone: boolean;
}

/**
 * A TCP proxy that can partition the network between a client and its server the way a real
 * partition does: nothing is refused and nothing is reset — connections are accepted, bytes are
 * taken, and nothing arrives on the other side until the partition heals. Then what was sent
 * arrives late, as TCP's retransmissions deliver it (a statement sent into the partition runs when
 * it heals; so does a connection opened during it, and one the client gave up on meanwhile is
 * delivered and then closed). Unlike a cut (test/persistence/pg-proxy.ts), the client learns
 * nothing: its requests hang.
 */
export class BlackholeProxy {
  private server: Server | null = null;
  private readonly pairs = new Set<Pair>();
  private partitioned = false;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  static forUrl(url: string): BlackholeProxy {
    const u = new URL(url);
    return new BlackholeProxy({ host: u.hostname, port: Number(u.port) || 5432 });
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
    await new Promise<void>((ok) => this.server!.listen(0, '127.0.0.1', ok));
    const addr = this.server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    return this;
  }

  /** From now on nothing crosses, either way; nothing is closed. */
  partition(): void {
    this.partitioned = true;
  }

  /** What the partition held arrives, in order; traffic flows again. */
  heal(): void {
    this.partitioned = false;
    for (const p of [...this.pairs]) {
      if (!p.upstream) this.connectUp(p);
      for (const b of p.toServer.splice(0)) p.upstream!.write(b);
      if (p.clientGone) {
        p.upstream!.end();
        this.pairs.delete(p);
        continue;
      }
      for (const b of p.toClient.splice(0)) p.client.write(b);
    }
  }

  async stop(): Promise<void> {
    for (const p of this.pairs) {
      p.client.destroy();
      p.upstream?.destroy();
    }
    this.pairs.clear();
    await new Promise<void>((ok) => (this.server ? this.server.close(() => ok()) : ok()));
  }

  private accept(client: Socket): void {
    const pair: Pair = { client, upstream: null, toServer: [], toClient: [], clientGone: false };
    this.pairs.add(pair);
    if (!this.partitioned) this.connectUp(pair);
    client.on('data', (b: Buffer) => (this.partitioned || !pair.upstream ? pair.toServer.push(b) : pair.upstream.write(b)));
    const gone = (): void => {
      // In a partition the close does not cross either: what was sent still arrives when it heals.
      if (this.partitioned) pair.clientGone = true;
      else {
        pair.upstream?.destroy();
        this.pairs.delete(pair);
      }
    };
    client.on('error', gone).on('close', gone);
  }

  private connectUp(pair: Pair): void {
    const upstream = connect(this.target);
    pair.upstream = upstream;
    upstream.on('data', (b: Buffer) => (this.partitioned ? pair.toClient.push(b) : pair.clientGone ? undefined : pair.client.write(b)));
    const gone = (): void => {
      if (this.partitioned) return; // the client hears of it when the partition heals (it never does here: a test's partition is short)
      pair.client.destroy();
      this.pairs.delete(pair);
    };
    upstream.on('error', gone).on('close', gone);
  }
}
