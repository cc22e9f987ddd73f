import { createHash } from 'node:crypto';
import type { KeystoneToken } from './types.js';

export interface TokenCacheOptions {
  /** Most tokens kept; the least recently used goes first. */
  maxEntries: number;
  /** keystonemiddleware's `token_cache_time`: a valid token is asked about again after this long. */
  ttlMs: number;
  /** How long a token Keystone refused is remembered as refused. */
  negativeTtlMs: number;
  now?: () => number;
}

type Entry = { valid: true; token: KeystoneToken; until: number } | { valid: false; until: number };

export type CacheAnswer = { hit: false } | { hit: true; token: KeystoneToken } | { hit: true; token: null };

/**
 * Validated tokens, keyed by a SHA-256 of the token (the tokens themselves are not kept): an
 * LRU bounded by `maxEntries`. A valid entry lasts `ttlMs` or until the token expires, whichever
 * is sooner, so a revoked token counts as revoked within `ttlMs`; a refused one `negativeTtlMs`.
 */
export class TokenCache {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;

  constructor(private readonly o: TokenCacheOptions) {
    this.now = o.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  static key(token: string): string {
    return createHash('sha256').update(token).digest('base64url');
  }

  get(token: string): CacheAnswer {
    const key = TokenCache.key(token);
    const e = this.entries.get(key);
    if (!e) return { hit: false };
    const now = this.now();
    if (now >= e.until) {
      this.entries.delete(key);
      return { hit: false };
    }
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.valid ? { hit: true, token: e.token } : { hit: true, token: null };
  }

  putValid(token: string, data: KeystoneToken): void {
    this.put(token, { valid: true, token: data, until: Math.min(this.now() + this.o.ttlMs, data.expiresAt) });
  }

  putInvalid(token: string): void {
    this.put(token, { valid: false, until: this.now() + this.o.negativeTtlMs });
  }

  clear(): void {
    this.entries.clear();
  }

  private put(token: string, e: Entry): void {
    const key = TokenCache.key(token);
    this.entries.delete(key);
    this.entries.set(key, e);
    while (this.entries.size > this.o.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }
}
