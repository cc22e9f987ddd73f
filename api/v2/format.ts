/** Cyborg's timestamp form: ISO-8601 to the second with an explicit offset (`2020-03-13T02:26:31+00:00`). */
export function ts(iso: string): string {
  return new Date(iso).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

/** What Python's `str(datetime)` gives, which Cyborg's single device-profile GET shows (a space, not `T`). */
export function pyStr(iso: string | null): string {
  return iso === null ? 'None' : ts(iso).replace('T', ' ');
}

/** `updated_at`: null until the object first changed after creation. */
export function updated(createdAt: string, updatedAt: string | null | undefined): string | null {
  return !updatedAt || updatedAt === createdAt ? null : ts(updatedAt);
}

export type Link = { href: string; rel: string };

/**
 * `base` is the API root this response was served under (links.ts `apiRoot`): Cyborg hard-codes
 * `/accelerator` after the host, which resolves only in a deployment mounted there.
 */
export function selfLink(base: string, collection: string, uuid: string): Link[] {
  return [{ href: `${base}/v2/${collection}/${uuid}`, rel: 'self' }];
}

/** The bookmark is the unversioned form, which this server answers too. */
export function selfAndBookmark(base: string, collection: string, uuid: string): Link[] {
  return [...selfLink(base, collection, uuid), { href: `${base}/${collection}/${uuid}`, rel: 'bookmark' }];
}

/**
 * Cyborg exposes a few integer foreign keys (`device_id`, `deployable_id`). Ours are uuids; the
 * integer is derived from the uuid's first 48 bits, so it is stable across restarts and
 * processes without a table of its own.
 */
export function intId(uuid: string): number {
  return Number.parseInt(uuid.replace(/-/g, '').slice(0, 12), 16);
}

const UUID_RE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/** oslo's `is_uuid_like`. */
export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

/** Splits Cyborg's comma-separated query values, dropping blanks. */
export function csv(s: string | undefined): string[] {
  return (s ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
}
