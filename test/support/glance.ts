import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface DoubleImage {
  id: string;
  data: string;
  properties?: Record<string, string>;
  /** Glance's image status; `active` unless a story says otherwise. */
  status?: string;
  /** What the record claims, when a story wants it to lie (a corrupted upload). */
  claimedHash?: string;
  /** `os_hash_algo`: Glance's `[DEFAULT] hashing_algorithm`, sha512 by default; null for an image older than multihash. */
  hashAlgo?: string | null;
}

/**
 * A test double of OpenStack Glance's image API v2 — a third-party service with no peer on this
 * machine — serving the calls an agent makes to program an FPGA, shaped as Glance answers them:
 * an image's record (`GET /v2/images/{id}`, with `checksum` (md5), `os_hash_algo` and
 * `os_hash_value`), the list filtered by properties (`GET /v2/images?accel:function_id=…`), and
 * the data (`GET /v2/images/{id}/file`). It counts the requests so that a story can say what was
 * fetched, can answer the next ones 503 (a Glance restarting behind its proxy), and can insist
 * on a token.
 */
export class GlanceDouble {
  readonly requests: string[] = [];
  /** The X-Auth-Token each request carried. */
  readonly tokens: (string | undefined)[] = [];
  /** The global request id (X-Openstack-Request-Id) each request carried. */
  readonly requestIds: (string | undefined)[] = [];
  /** Requests still to be answered 503. */
  unavailable = 0;
  /** When set, a request without this token is answered 401. */
  token: string | undefined;
  private server: Server | undefined;
  url = '';

  constructor(readonly images: DoubleImage[]) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://glance');
      this.requests.push(`${req.method} ${u.pathname}${u.search}`);
      const token = req.headers['x-auth-token'];
      this.tokens.push(typeof token === 'string' ? token : undefined);
      const requestId = req.headers['x-openstack-request-id'];
      this.requestIds.push(typeof requestId === 'string' ? requestId : undefined);
      const send = (status: number, body: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (this.unavailable > 0) {
        this.unavailable--;
        return send(503, { message: 'The server is currently unavailable.' });
      }
      if (this.token && token !== this.token) return send(401, { message: 'The request you have made requires authentication.' });
      const file = /^\/v2\/images\/([^/]+)\/file$/.exec(u.pathname);
      const one = /^\/v2\/images\/([^/]+)$/.exec(u.pathname);
      if (file) {
        const img = this.images.find((i) => i.id === decodeURIComponent(file[1]!));
        if (!img) return send(404, { message: 'not found' });
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-md5': md5(img.data) });
        return res.end(img.data);
      }
      if (one) {
        const img = this.images.find((i) => i.id === decodeURIComponent(one[1]!));
        return img ? send(200, record(img)) : send(404, { message: 'not found' });
      }
      if (u.pathname === '/v2/images') {
        // Glance filters by any property given as a query parameter; `limit`, `marker` and `sort` page and order.
        const filters = [...u.searchParams].filter(([k]) => !['sort', 'limit', 'marker', 'sort_key', 'sort_dir'].includes(k));
        const found = this.images.map(record).filter((r) => filters.every(([k, v]) => r[k] === v));
        return send(200, { images: found, first: '/v2/images', schema: '/v2/schemas/images' });
      }
      send(404, { message: 'not found' });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise((r) => this.server?.close(r));
  }
}

const md5 = (data: string): string => createHash('md5').update(data).digest('hex');

function record(img: DoubleImage): Record<string, unknown> {
  const algo = img.hashAlgo === undefined ? 'sha512' : img.hashAlgo;
  return {
    id: img.id,
    name: img.id,
    status: img.status ?? 'active',
    size: Buffer.byteLength(img.data),
    visibility: 'public',
    disk_format: 'raw',
    container_format: 'bare',
    checksum: md5(img.data),
    os_hash_algo: algo,
    os_hash_value: algo ? (img.claimedHash ?? createHash(algo).update(img.data).digest('hex')) : null,
    self: `/v2/images/${img.id}`,
    file: `/v2/images/${img.id}/file`,
    schema: '/v2/schemas/image',
    ...img.properties,
  };
}
