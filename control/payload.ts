import type { Bus } from '../bus/index.js';
import { NatsBus } from '../bus/index.js';
import { CyborgError } from '../errors/index.js';

/** NATS's default `max_payload`: what we assume until the server has told us its own. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/**
 * The largest message the bus may carry: the NATS server's `max_payload` as its INFO announced it
 * (a server may be configured below or above the default), or unbounded in process.
 */
export function maxPayloadOf(bus: Bus): number {
  if (!(bus instanceof NatsBus)) return Number.POSITIVE_INFINITY;
  return bus.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
}

/** What a message weighs on the wire (JSON, UTF-8). */
export function wireSize(msg: unknown): number {
  return Buffer.byteLength(JSON.stringify(msg) ?? '', 'utf8');
}

/**
 * Refuses a message larger than the bus carries, with a typed error: NATS would refuse it too,
 * and a refused reply or publish is otherwise lost without a word (the requester only times out).
 */
export function checkPayload(subject: string, msg: unknown, max: number): void {
  if (!Number.isFinite(max)) return;
  const size = wireSize(msg);
  if (size > max) {
    throw new CyborgError('bus.payload_too_large', `a message on ${subject} weighs ${size} bytes, over the server's max_payload of ${max}`, {
      subject,
      size,
      max,
    });
  }
}

/**
 * Packs items already weighed (`sizes[i]`, bytes of their JSON), in order, into groups that stay
 * under `budget` bytes (`overhead` is what the envelope around them weighs): the groups' indexes.
 * An item heavier than the budget alone travels alone: its message is then refused, loudly.
 */
export function packBySizes(sizes: readonly number[], budget: number, overhead = 512): number[][] {
  const out: number[][] = [];
  let cur: number[] = [];
  let used = overhead;
  sizes.forEach((weight, i) => {
    const size = weight + 1;
    if (cur.length > 0 && used + size > budget) {
      out.push(cur);
      cur = [];
      used = overhead;
    }
    cur.push(i);
    used += size;
  });
  if (cur.length > 0) out.push(cur);
  return out;
}
