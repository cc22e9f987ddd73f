import type { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { jsonObjectStream, type StreamedPart } from './stream-list.js';

async function text(r: Readable): Promise<{ body: string; chunks: number }> {
  let body = '';
  let chunks = 0;
  for await (const c of r) {
    body += String(c);
    chunks++;
  }
  return { body, chunks };
}

/** What the stream must equal: the object JSON.stringify would have made at once. */
function whole(parts: Record<string, StreamedPart>): unknown {
  return Object.fromEntries(
    Object.entries(parts).map(([k, p]) => [
      k,
      'value' in p ? p.value : p.items.map((x) => ('toText' in p ? (JSON.parse(p.toText(x as never)) as unknown) : p.toJson(x as never))),
    ]),
  );
}

describe('a JSON object streamed list by list', () => {
  const big = Array.from({ length: 150 }, (_, i) => ({ i }));
  const cases: Record<string, Record<string, StreamedPart>> = {
    "the snapshot's shape: a value, an empty list, a long list, a short one": {
      cursor: { value: 7 },
      hosts: { items: [], toJson: (x) => x },
      accelerators: { items: big, toJson: (x: { i: number }) => ({ ...x, seen: true }) },
      arqs: { items: [{ a: 1 }], toJson: (x) => x },
    },
    'one long list': { arqs: { items: big, toJson: (x) => x } },
    'items serialized by the caller': { arqs: { items: big, toText: (x: { i: number }) => `{"n":${x.i}}` } },
    'values only': { a: { value: null }, b: { value: 'x"y' } },
    nothing: {},
  };
  for (const [name, parts] of Object.entries(cases)) {
    it(`is the same JSON as the whole object: ${name}`, async () => {
      const { body } = await text(jsonObjectStream(parts));
      expect(JSON.parse(body)).toEqual(whole(parts));
    });
  }

  it('hands a long list over in batches, not as one text', async () => {
    const { chunks } = await text(jsonObjectStream({ arqs: { items: big, toJson: (x) => x } }));
    expect(chunks).toBeGreaterThan(2);
  });
});
