import type { FastifyRequest } from 'fastify';
import { BlockList, isIP } from 'node:net';
import { parseTrustedProxy } from '../../config/index.js';
import { CyborgError } from '../../errors/index.js';

/** Fastify's `trustProxy` function form: is the peer at this address a proxy we believe? */
export type TrustFn = (address: string, hop: number) => boolean;

/** The mounts the v2 API is served under: the root, and devstack's `/accelerator`. */
export const MOUNTS = ['', '/accelerator'] as const;
export type Mount = (typeof MOUNTS)[number];

/** What a link needs besides the request: the configured public endpoint and the proxy trust. */
export interface LinkSettings {
  /** The URL at which clients reach the API's root (`GET /`); links are built under it. */
  publicEndpoint?: string;
  /** Whose `X-Forwarded-*` headers are believed; none when absent. */
  trust?: TrustFn;
  /** Which copy of the API answered: its links stay under the same mount. */
  mount: Mount;
}

/**
 * Compiles the configured trusted proxies (addresses, CIDRs, or `loopback`) into one function,
 * given both to Fastify's `trustProxy` (for `X-Forwarded-Proto` / `-Host`) and to the links'
 * `X-Forwarded-Prefix`, so one list decides both. The config loader parses the entries the same way and refuses a
 * malformed one at boot.
 */
export function compileTrust(entries: readonly string[]): TrustFn | undefined {
  if (entries.length === 0) return undefined;
  const list = new BlockList();
  for (const raw of entries) {
    const proxy = parseTrustedProxy(raw);
    // loadConfig refused a malformed entry already; this guards a caller that skipped it.
    if (!proxy) throw new CyborgError('config.invalid', `trusted proxy "${raw}" is neither an IP address, a CIDR nor "loopback"`);
    if (proxy.loopback) {
      list.addSubnet('127.0.0.0', 8, 'ipv4');
      list.addAddress('::1', 'ipv6');
      continue;
    }
    const type = proxy.family === 4 ? 'ipv4' : 'ipv6';
    if (proxy.prefix === undefined) list.addAddress(proxy.address, type);
    else list.addSubnet(proxy.address, proxy.prefix, type);
  }
  return (address) => {
    if (!address) return false;
    // A dual-stack socket reports IPv4 peers as IPv4-mapped IPv6 addresses.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    if (mapped) return list.check(mapped, 'ipv4') || list.check(address, 'ipv6');
    return list.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  };
}

const PREFIX_RE = /^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$/;

/** `X-Forwarded-Prefix` from a trusted proxy, as a path without a trailing slash ('' if none or unusable). */
function forwardedPrefix(req: FastifyRequest, trust: TrustFn | undefined): string {
  const header = req.headers['x-forwarded-prefix'];
  if (header === undefined || !trust || !trust(req.raw.socket?.remoteAddress ?? '', 0)) return '';
  const value = (Array.isArray(header) ? header[header.length - 1]! : header).split(',').pop()!.trim().replace(/\/+$/, '');
  return PREFIX_RE.test(value) ? value : '';
}

/**
 * Where this copy of the API answers `GET /`, as the client sees it: the configured public
 * endpoint, else the request's scheme and host (`X-Forwarded-Proto` / `-Host` / `-Prefix` when
 * the peer is a trusted proxy) followed by the mount the request came in on. Every link of a
 * response is built under it, so a client that follows them stays on URLs this server answers.
 */
export function apiRoot(req: FastifyRequest, s: LinkSettings): string {
  if (s.publicEndpoint) return s.publicEndpoint.replace(/\/+$/, '');
  return `${req.protocol}://${req.host}${forwardedPrefix(req, s.trust)}${s.mount}`;
}
