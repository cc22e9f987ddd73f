import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { nextHref, page, type PageRequest } from './paging.js';

/** Items serialized per read of the stream: small enough that a slow reader holds little. */
const BATCH = 64;

/**
 * `{"<key>": [ ... ]}` as a stream that serializes `items` a batch at a time, only as fast as
 * the client reads: a client that reads slowly (or never) holds this request's list of
 * references and one batch, not the whole answer as text. 150 slow readers of 20,000 ARQs would
 * otherwise hold 150 copies of a 14 MB body (bench/slow-readers.ts measures it).
 *
 * `toJson` runs when its batch is read, so an item shows as it is then; `items` is the list as it
 * was when the request came (its membership does not change under the stream).
 */
export function jsonListStream<T>(key: string, items: readonly T[], toJson: (item: T) => unknown): Readable {
  let at = 0;
  return new Readable({
    // One batch of text at most waits in the stream, whatever the client's pace.
    highWaterMark: 16 * 1024,
    read() {
      let chunk = at === 0 ? `{${JSON.stringify(key)}:[` : '';
      const end = Math.min(items.length, at + BATCH);
      for (; at < end; at++) chunk += (at === 0 ? '' : ',') + JSON.stringify(toJson(items[at]!));
      if (at >= items.length) {
        this.push(`${chunk}]}`);
        this.push(null);
      } else this.push(chunk);
    },
  });
}

/**
 * A list as the v2 API answers it. With `limit` or `marker`, one page (`limit` at most `pageMax`,
 * after the item `marker` names) and, while more follow, `next`. Without either, every item —
 * Nova and tempest ask for a whole list (an instance's ARQs, every ARQ) and expect all of it —
 * streamed, so the answer costs bounded memory however large the list and however slow its reader.
 */
export function sendList<T>(
  reply: FastifyReply, key: string, items: readonly T[], req: PageRequest & { url: string },
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

