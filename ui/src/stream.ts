import { api, BASE } from './api.js';
import { session } from './auth.js';
import { openSse, SseHttpError, type SseMessage } from './sse.js';
import type { Store } from './store.js';
import type { EventBatch } from './types.js';

/** With no message for this long (the server sends a keep-alive every 15 s) the stream is dead. */
const SILENCE_MS = 40_000;

/**
 * Keeps the store live: loads the snapshot, then follows `/events` from the snapshot's cursor.
 * The stream is read with fetch (sse.ts), not EventSource, so that it carries the session's
 * X-Auth-Token; when it breaks it is opened again with backoff and `Last-Event-ID`, so nothing is
 * missed. When the server answers `reset` (our cursor fell out of its ring, or it restarted) the
 * snapshot is loaded again. A 401 ends the session (the page returns to the sign-in form).
 * Returns a function that stops following.
 */
export function follow(store: Store): () => void {
  let hangUp: (() => void) | null = null;
  let open_ = false;
  let stopped = false;
  let retryMs = 500;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let lastMessage = Date.now();
  let lastEventId = '';

  const reload = async (): Promise<void> => {
    store.load(await api.snapshot());
  };

  const onMessage = (m: SseMessage): void => {
    lastMessage = Date.now();
    lastEventId = m.lastEventId;
    if (m.event === 'batch') store.apply(JSON.parse(m.data) as EventBatch);
    else if (m.event === 'reset') reload().catch((err: unknown) => store.setConnection('lost', String(err)));
  };

  const open = (): void => {
    if (stopped) return;
    hangUp?.();
    open_ = false;
    hangUp = openSse(`${BASE}/events?cursor=${store.cursor}`, {
      headers: session.headers(),
      lastEventId: lastEventId || String(store.cursor),
      onOpen: () => {
        retryMs = 500;
        open_ = true;
        lastMessage = Date.now();
        store.setConnection('live');
      },
      onMessage,
      onClose: (err) => {
        open_ = false;
        if (err instanceof SseHttpError && err.status === 401) {
          store.setConnection('lost', 'signed out');
          session.expired();
          return;
        }
        store.setConnection('lost', err instanceof SseHttpError ? err.message : 'connection lost, reconnecting…');
        restart();
      },
    });
  };

  const restart = (): void => {
    hangUp?.();
    hangUp = null;
    clearTimeout(retryTimer);
    // The snapshot is reloaded only if the cursor is no longer served: open() resumes from it.
    retryTimer = setTimeout(open, retryMs);
    retryMs = Math.min(retryMs * 2, 10_000);
  };

  const watchdog = setInterval(() => {
    if (open_ && Date.now() - lastMessage > SILENCE_MS) {
      store.setConnection('lost', 'no message from the server, reconnecting…');
      restart();
    }
  }, 5_000);

  const start = async (): Promise<void> => {
    store.setConnection('connecting');
    for (;;) {
      try {
        await reload();
        lastEventId = '';
        open();
        return;
      } catch (err) {
        if (stopped) return;
        store.setConnection('lost', `cannot load the state: ${String(err)}`);
        await new Promise((r) => setTimeout(r, retryMs));
        retryMs = Math.min(retryMs * 2, 10_000);
        if (stopped) return;
      }
    }
  };
  void start();

  return () => {
    stopped = true;
    clearInterval(watchdog);
    clearTimeout(retryTimer);
    hangUp?.();
  };
}
