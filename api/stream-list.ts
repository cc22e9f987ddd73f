import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { nextHref, page, type PageRequest } from './paging.js';

/** Items serialized per read of the stream: small enough that a slow reader holds little. */
const BATCH = 64;

/** One member of a streamed JSON object: a plain value, or a list serialized item by item. */
export type StreamedPart =
  | { value: unknown }
  | { items: readonly unknown[]; toJson: (item: never) => unknown }
  /** Items serialized by the caller (a route's own schema serializer): its text goes as it is. */
  | { items: readonly unknown[]; toText: (item: never) => string };

/**
 * A JSON object whose lists are serialized a batch at a time, only as fast as the client reads:
 * a client that reads slowly (or never) holds this request's lists of references and one batch,
 * not the whole answer as text. 150 slow readers of 20,000 ARQs would otherwise hold 150 copies
 * of a 9 MB body (bench/slow-readers.ts measures it).
 *
 * `toJson` runs when its batch is read, so an item shows as it is then; the lists are as they
 * were when the request came (their membership does not change under the stream).
 */
export function jsonObjectStream(parts: Record<string, StreamedPart>): Readable {
  const keys = Object.keys(parts);
  let k = 0;
  let at = -1;
  return new Readable({
    // One batch of text at most waits in the stream, whatever the client's pace.
    highWaterMark: 16 * 1024,
    read() {
      let chunk = '';
      // Plain values and a list's opening go with the next batch of items: one batch per read.
      for (;;) {
        if (k >= keys.length) {
          this.push(`${chunk}${k === 0 ? '{' : ''}}`);
          this.push(null);
          return;
        }
        const part = parts[keys[k]!]!;
        if (at < 0) chunk += `${k === 0 ? '{' : ','}${JSON.stringify(keys[k])}:`;
        if ('value' in part) {
          chunk += JSON.stringify(part.value);
          k++;
          continue;
        }
        if (at < 0) {
          chunk += '[';
          at = 0;
        }
        const end = Math.min(part.items.length, at + BATCH);
        const text = 'toText' in part ? part.toText : (x: never): string => JSON.stringify(part.toJson(x));
        for (; at < end; at++) chunk += (at === 0 ? '' : ',') + text(part.items[at] as never);
        if (at >= part.items.length) {
          chunk += ']';
          k++;
          at = -1;
        }
        this.push(chunk);
        return;
      }
    },
  });
}

/** `{"<key>": [ ... ]}`, streamed (see jsonObjectStream). */
export function jsonListStream<T>(key: string, items: readonly T[], toJson: (item: T) => unknown): Readable {
  return jsonObjectStream({ [key]: { items, toJson: toJson as (item: never) => unknown } });
}

/**
 * A list as the v2 API answers it. With `limit` or `marker`, one page (`limit` at most `pageMax`,
 * after the item `marker` names) and, while more follow, `next`. Without either, every item —
 * Nova and tempest ask for a whole list (an instance's ARQs, every ARQ) and expect all of it —
 * streamed, so the answer costs bounded memory however large the list and however slow its reader.
 */
export function sendList<T>(
  reply: FastifyReply,
  key: string,
  items: readonly T[],
  req: PageRequest & { url: string },
  o: { id: (item: T) => string; toJson: (item: T) => unknown; pageMax: number },
): FastifyReply {
  if (req.limit !== undefined || req.marker !== undefined) {
    const p = page(items, req, o.id, o.pageMax);
    const body: Record<string, unknown> = { [key]: p.items.map(o.toJson) };
    if (p.nextMarker !== undefined) body.next = nextHref(req.url, p.nextMarker);
    return reply.send(body);
  }
  return reply.type('application/json; charset=utf-8').send(jsonListStream(key, items, o.toJson));
}
