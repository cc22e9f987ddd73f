import { isIP } from 'node:net';

/** One `[api] trusted_proxies` entry: `loopback`, or an address with an optional prefix length. */
export type TrustedProxy = { loopback: true } | { loopback?: false; address: string; family: 4 | 6; prefix?: number };

/**
 * Parses one entry, or undefined when it is none of the three forms. The config loader refuses a
 * bad entry at boot and the API compiles the good ones with this same function, so what the
 * loader accepts is exactly what the API can use.
 */
export function parseTrustedProxy(raw: string): TrustedProxy | undefined {
  const entry = raw.trim();
  if (entry === 'loopback') return { loopback: true };
  const [address = '', bits, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return undefined;
  if (bits === undefined) return { address, family: family as 4 | 6 };
  const prefix = /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (!(prefix >= 0 && prefix <= (family === 4 ? 32 : 128))) return undefined;
  return { address, family: family as 4 | 6, prefix };
}

/** A host name as RFC 1123 writes it; a dotted name whose last label is all digits is a mistyped IPv4 address, not a name. */
const HOSTNAME = /^(?=.{1,253}\.?$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

/** Whether `[api] host_ip` can be listened on at all: an IP address, or a name the resolver may know. */
export function isListenAddress(value: string): boolean {
  if (isIP(value) !== 0) return true;
  return HOSTNAME.test(value) && !/(^|\.)\d+\.?$/.test(value);
}
