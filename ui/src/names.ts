import { api } from './api.js';
import { session } from './auth.js';
import { projectsOf } from './select.js';
import type { Store } from './store.js';

/** A project id Keystone gave no name for (unknown, or Keystone away) is asked about again after this long. */
const ASK_AGAIN_MS = 60_000;
/** Events come in bursts on a big fleet: the look for unnamed ids is coalesced over this long. */
const COALESCE_MS = 250;

/**
 * Learns Keystone's names of the projects that hold cards: the snapshot and the event stream
 * carry project ids only (a name lookup must never hold the stream), so when a project id
 * appears that the page has no name for, it asks `GET /projects` — one call in flight at most,
 * each id at most once a minute while it has no name. The api answers from its cached Keystone
 * directory (names.ts there); in noauth mode it asks nothing, and for a project Keystone does not
 * know the id stands. Returns a function that stops following.
 */
export function followProjectNames(store: Store, now: () => number = Date.now): () => void {
  const asked = new Map<string, number>();
  let busy = false;
  let stopped = false;

  const unnamed = (): string[] => {
    const out = new Set<string>();
    for (const a of store.accelerators.values())
      for (const id of projectsOf(a)) if (!store.projectNames.has(id) && now() - (asked.get(id) ?? -Infinity) >= ASK_AGAIN_MS) out.add(id);
    return [...out];
  };

  const check = (): void => {
    // Names come from Keystone: in noauth there are none to learn.
    if (busy || stopped || session.mode === 'noauth') return;
    const ids = unnamed();
    if (ids.length === 0) return;
    for (const id of ids) asked.set(id, now());
    busy = true;
    api
      .projects()
      .then((projects) => {
        if (stopped) return;
        store.nameProjects(Object.fromEntries(projects.flatMap((p) => (p.projectName ? [[p.projectId, p.projectName]] : []))));
      })
      // A refusal or an api away: the ids stand, asked again after ASK_AGAIN_MS.
      .catch(() => undefined)
      .finally(() => {
        busy = false;
        check(); // ids that appeared meanwhile
      });
  };

  // The store changes on every event; the scan over every card runs at most once per COALESCE_MS.
  let pending: ReturnType<typeof setTimeout> | undefined;
  const soon = (): void => {
    pending ??= setTimeout(() => {
      pending = undefined;
      check();
    }, COALESCE_MS);
  };
  const off = store.subscribe(soon);
  check();
  return () => {
    stopped = true;
    if (pending) clearTimeout(pending);
    off();
  };
}
