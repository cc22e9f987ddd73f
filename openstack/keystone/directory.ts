import { NoAnswerError, openstackDispatcher, send, within, type LazyDispatcher } from './http.js';
import type { KeystoneSession } from './session.js';
import { KeystoneUnavailableError } from './types.js';

export interface KeystoneDirectoryOptions {
  /** The service user's session: its token asks Keystone for users and projects (identity:get_user, list_users). */
  session: KeystoneSession;
  /** How long an answer is kept: names change rarely, and a list of cards must not ask Keystone each time. */
  ttlMs?: number;
  /** A lookup longer than this is given up: a name is a courtesy, never worth holding a read for. */
  timeoutMs?: number;
  maxEntries?: number;
  /** After a failed lookup, none is tried for this long (the ids stand meanwhile). */
  retryAfterMs?: number;
  dispatcher?: LazyDispatcher;
  now?: () => number;
}

type Kind = 'users' | 'projects';

/**
 * Keystone's names of users and projects by id, and their ids by name, for people reading the
 * audit and the holders of a card: the log keeps the ids a token gave (and the names where the
 * token had them), the placement of an instance only its project's id. Answers are cached; a
 * Keystone that does not answer, or refuses the service user, gives no name (the id stands, or
 * the name last known) and is not asked again for `retryAfterMs`.
 */
export class KeystoneDirectory {
  private readonly cache = new Map<string, { at: number; value: string[] }>();
  private readonly inflight = new Map<string, Promise<string[]>>();
  private readonly dispatcher: LazyDispatcher;
  /** Until when lookups are not tried after one failed: a Keystone away must not add its timeout to every read. */
  private quietUntil = 0;
  private readonly now: () => number;

  constructor(private readonly o: KeystoneDirectoryOptions) {
    this.dispatcher = o.dispatcher ?? openstackDispatcher({ retries: 0 });
    this.now = o.now ?? Date.now;
  }

  async projectName(id: string): Promise<string | undefined> {
    return (await this.lookup('projects', 'id', id))[0];
  }

  /**
   * The name of this project as the cache has it now, never waiting: one not cached, or cached
   * longer than the ttl, is looked up in the background for a later call (the name last known
   * meanwhile). For readers that must not wait on Keystone at all — a Prometheus scrape.
   */
  cachedProjectName(id: string): string | undefined {
    if (id === '') return undefined;
    const hit = this.cache.get(`projects|id|${id}`);
    // lookup() never rejects (a failure is no name), and pauses itself after one.
    if (!hit || this.now() - hit.at >= (this.o.ttlMs ?? 300_000)) void this.lookup('projects', 'id', id);
    return hit?.value[0];
  }

  async userName(id: string): Promise<string | undefined> {
    return (await this.lookup('users', 'id', id))[0];
  }

  /** The ids of the projects of this name (one per domain that has one). */
  projectIds(name: string): Promise<string[]> {
    return this.lookup('projects', 'name', name);
  }

  userIds(name: string): Promise<string[]> {
    return this.lookup('users', 'name', name);
  }

  /** The names of these project ids that Keystone knows, at most one lookup each (cached). */
  async projectNames(ids: Iterable<string>): Promise<Record<string, string>> {
    const unique = [...new Set(ids)].filter((id) => id !== '');
    const names = await Promise.all(unique.map((id) => this.projectName(id)));
    return Object.fromEntries(unique.flatMap((id, i) => (names[i] === undefined ? [] : [[id, names[i]!]])));
  }

  private lookup(kind: Kind, by: 'id' | 'name', key: string): Promise<string[]> {
    const k = `${kind}|${by}|${key}`;
    const hit = this.cache.get(k);
    if (hit && this.now() - hit.at < (this.o.ttlMs ?? 300_000)) return Promise.resolve(hit.value);
    if (this.now() < this.quietUntil) return Promise.resolve(hit?.value ?? []);
    let p = this.inflight.get(k);
    if (!p) {
      // The whole lookup, the service user's own sign-in included, within the timeout.
      const ms = this.o.timeoutMs ?? 5_000;
      p = within(
        ms,
        () => this.ask(kind, by, key, ms),
        (t) => new NoAnswerError(`keystone: no answer to a name lookup within ${t} ms`),
      )
        .then((value) => {
          if (this.cache.size >= (this.o.maxEntries ?? 10_000)) this.cache.delete(this.cache.keys().next().value!);
          this.cache.set(k, { at: this.now(), value });
          return value;
        })
        // Not cached: Keystone away or slow is asked again after a pause, and the id stands meanwhile.
        .catch(() => {
          this.quietUntil = this.now() + (this.o.retryAfterMs ?? 10_000);
          return hit?.value ?? [];
        })
        .finally(() => this.inflight.delete(k));
      this.inflight.set(k, p);
    }
    return p;
  }

  /** Ids by name (`GET /v3/users?name=`), or the name of an id (`GET /v3/users/{id}`); a 404 is none. */
  private async ask(kind: Kind, by: 'id' | 'name', key: string, timeoutMs: number): Promise<string[]> {
    const path = by === 'id' ? `/${kind}/${encodeURIComponent(key)}` : `/${kind}?name=${encodeURIComponent(key)}`;
    const token = await this.o.session.token();
    const res = await send(this.dispatcher, this.o.session.authUrl + path, { method: 'GET', headers: { 'x-auth-token': token }, timeoutMs }, 'keystone');
    if (res.status === 404) return [];
    // Caught by lookup(): no name, the id stands (a refusal of the service user, a Keystone in trouble).
    if (res.status !== 200) throw new KeystoneUnavailableError(`keystone GET ${path}: ${res.status}`);
    const body = JSON.parse(res.text) as Record<string, unknown>;
    if (by === 'id') {
      const one = body[kind.slice(0, -1)] as { name?: unknown } | undefined;
      return typeof one?.name === 'string' ? [one.name] : [];
    }
    const many = (body[kind] ?? []) as { id?: unknown }[];
    return many.flatMap((x) => (typeof x.id === 'string' ? [x.id] : []));
  }
}
