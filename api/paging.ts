import { Type } from '@sinclair/typebox';
import { CyborgError, type ErrorCode } from '../errors/index.js';
import { MAX, Text } from './bounds.js';

/**
 * Pages of a list, as Cyborg (and Ironic, Nova) page theirs: `limit` items at most, after the item
 * named by `marker` (the id of the last item of the previous page); a page that is not the last
 * says where the next one is (`next`). A `limit` over the configured maximum (`api.pageMax`) is
 * lowered to it, and a list asked without `limit` answers at most that many too, so no answer
 * grows with the fleet. A marker that names no item of the list is a 400 naming `marker`.
 */
export const PageQuery = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'most items in this page (at most the configured api.pageMax)' }),
  ),
  marker: Type.Optional(Text(MAX.name, { minLength: 1, description: 'the id of the last item of the previous page' })),
};

/** The link to the next page, present while there is one. */
export const NextLink = Type.Optional(Type.String({ description: 'where the next page is (this request with `marker` set); absent on the last page' }));

export interface PageRequest {
  limit?: number;
  marker?: string;
}

export interface Page<T> {
  items: T[];
  /** The id of the last item, when more follow it. */
  nextMarker?: string;
}

/**
 * One page of `items` (in a stable order: the same list asked twice is in the same order), keyed
 * by `id`. `code` is the error a marker that is not in the list is answered with.
 */
export function page<T>(items: readonly T[], req: PageRequest, id: (item: T) => string, max: number, code: ErrorCode = 'request.invalid'): Page<T> {
  const limit = Math.min(req.limit ?? max, max);
  let start = 0;
  if (req.marker !== undefined) {
    const at = items.findIndex((item) => id(item) === req.marker);
    if (at < 0)
      throw new CyborgError(code, `marker ${req.marker} is not an item of this list (it may have been removed): start again without marker`, {
        field: 'marker',
      });
    start = at + 1;
  }
  const slice = items.slice(start, start + limit);
  return start + limit < items.length && slice.length > 0 ? { items: slice, nextMarker: id(slice[slice.length - 1]!) } : { items: slice };
}

/** This request's URL (path and query as the client sent it) with `marker` set to the next page's. */
export function nextHref(url: string, marker: string): string {
  const u = new URL(url, 'http://placeholder');
  u.searchParams.set('marker', marker);
  return `${u.pathname}${u.search}`;
}

/** A page as the operator API answers it: the list under its name and, while more follow, `next`. */
export function pageBody<K extends string, T>(key: K, p: Page<T>, url: string): Record<K, T[]> & { next?: string } {
  const body = { [key]: p.items } as Record<K, T[]> & { next?: string };
  if (p.nextMarker !== undefined) body.next = nextHref(url, p.nextMarker);
  return body;
}
