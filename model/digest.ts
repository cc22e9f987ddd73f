import { createHash } from 'node:crypto';

/** How many buckets a digest splits its ids into: a difference is found per bucket, not per row. */
export const DIGEST_BUCKETS = 64;

/**
 * The committed state of the fleet as digests: accelerators (id → machine state) and ARQs
 * (uuid → machine state), each split into `DIGEST_BUCKETS` buckets by id. The conductor computes
 * it from the database, the api from its view (control/view-check.ts): equal buckets hold equal
 * rows. A short hex digest per bucket and the row count; a few kilobytes for any fleet.
 */
export interface StateDigest {
  accelerators: { count: number; buckets: string[] };
  arqs: { count: number; buckets: string[] };
}

/** The bucket digests of `rows` (id, state), whatever their order. */
export function bucketDigest(rows: Iterable<readonly [string, string]>): { count: number; buckets: string[] } {
  const lines: string[][] = Array.from({ length: DIGEST_BUCKETS }, () => []);
  let count = 0;
  for (const [id, state] of rows) {
    lines[bucketOf(id)]!.push(`${id}\t${state}`);
    count++;
  }
  return { count, buckets: lines.map((l) => createHash('sha256').update(l.sort().join('\n')).digest('hex').slice(0, 16)) };
}

/** A stable bucket for an id (its first bytes' hash: ids are uuids, but need not be). */
function bucketOf(id: string): number {
  let h = 2166136261;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
  return (h >>> 0) % DIGEST_BUCKETS;
}
