/**
 * Hostile input, generated from a seed so that a failing run is replayed by its seed
 * (FUZZ_SEED=<n>): the values a careless or malicious client sends — NUL bytes, lone
 * surrogates, megabyte strings, JSON ten thousand levels deep, huge arrays, wrong types —
 * mixed with well-formed ones, so that some requests get past the edge and reach the database.
 */
export class Rng {
  private s: number;
  constructor(readonly seed: number) {
    this.s = seed >>> 0;
  }

  /** mulberry32: small, fast, and good enough to spread the cases. */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** The seed of this run: FUZZ_SEED when given, otherwise a fixed one (the suite stays deterministic). */
export function seedFromEnv(fallback: number): number {
  const s = Number(process.env.FUZZ_SEED);
  return Number.isInteger(s) ? s : fallback;
}

export const MB = 1024 * 1024;

/** JSON text nested `depth` levels deep (arrays or objects), as a parser receives it. */
export function deepJson(depth: number, objects = false): string {
  return objects ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '['.repeat(depth) + ']'.repeat(depth);
}

/** A nested value `depth` levels deep, built without recursion. */
export function deepValue(depth: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

/** A plausible id, name or uuid — or something that only looks like one. */
export function hostileString(r: Rng): string {
  switch (r.int(12)) {
    case 0:
      return `nul\u0000${r.int(1000)}`;
    case 1:
      return `lone\uD800surrogate`;
    case 2:
      return `\uDC00${r.int(10)}`;
    case 3:
      return 'x'.repeat(r.pick([256, 4097, 70_000]));
    case 4:
      return 'y'.repeat(MB);
    case 5:
      return '';
    case 6:
      return '../../etc/passwd';
    case 7:
      return "'; drop table arqs; --";
    case 8:
      return '85e4fd81-4906-4155-851d-cd0f814a9161';
    case 9:
      return `emoji-😀-${r.int(100)}`;
    case 10:
      return '%00%ff%fe';
    default:
      return `ok-${r.int(100_000)}`;
  }
}

/** Any JSON value, often of the wrong type for where it goes. */
export function hostileValue(r: Rng, depth = 0): unknown {
  switch (r.int(depth > 2 ? 7 : 11)) {
    case 0:
      return hostileString(r);
    case 1:
      return r.pick([0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308]);
    case 2:
      return r.pick([true, false]);
    case 3:
      return null;
    case 4:
      return hostileString(r);
    case 5:
      return `v${r.int(10)}`;
    case 6:
      return r.int(5);
    case 7:
      return Array.from({ length: r.pick([0, 1, 3, 100_000]) }, () => (r.chance(0.5) ? 'a' : 1));
    // Deeper still is sent as text (deepJson): JSON.stringify of this process would overflow first.
    case 8:
      return deepValue(r.pick([50, 1_000]));
    case 9:
      return Object.fromEntries(Array.from({ length: r.int(4) }, () => [hostileString(r).slice(0, 300), hostileValue(r, depth + 1)]));
    default:
      return Array.from({ length: r.int(4) }, () => hostileValue(r, depth + 1));
  }
}

/** A JSON object with the given field names (real ones, so validation sees them) set to hostile values. */
export function hostileObject(r: Rng, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) if (r.chance(0.7)) out[f] = r.chance(0.3) ? `ok-${r.int(100)}` : hostileValue(r);
  if (r.chance(0.2)) out[hostileString(r).slice(0, 300)] = hostileValue(r);
  return out;
}

/**
 * Percent-encoding that also sends what encodeURIComponent refuses: a lone surrogate goes out as
 * the bytes of its (invalid) three-byte UTF-8 form, as a hostile client would send it.
 */
export function urlEncode(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    let out = '';
    for (const ch of s) {
      try {
        out += encodeURIComponent(ch);
      } catch {
        const c = ch.charCodeAt(0);
        out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
      }
    }
    return out;
  }
}
