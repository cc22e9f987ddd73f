import { api, BASE } from './api.js';
import type { Store } from './store.js';
import type { EventBatch } from './types.js';

/** With no message for this long (the server sends a keep-alive every 15 s) the stream is dead. */
const SILENCE_MS = 40_000;

/**
 * Keeps the store live: loads the snapshot, then follows `/events` from the snapshot's cursor.
 * The browser's EventSource reconnects by itself with `Last-Event-ID`, so nothing is missed;
 * when the server answers `reset` (our cursor fell out of its ring, or it restarted) the
 * snapshot is loaded again. A connection that fails hard is rebuilt with backoff.
 * Returns a function that stops following.
 */
export function follow(store: Store): () => void {
  let source: EventSource | null = null;
  let stopped = false;
  let retryMs = 500;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let lastMessage = Date.now();

  const reload = async (): Promise<void> => {
    store.load(await api.snapshot());
  };

  const open = (): void => {
    if (stopped) return;
    source?.close();
    const es = new EventSource(`${BASE}/events?cursor=${store.cursor}`);
    source = es;
    es.onopen = () => {
      retryMs = 500;
      lastMessage = Date.now();
      store.setConnection('live');
    };
    es.addEventListener('batch', (m) => {
      lastMessage = Date.now();
      store.apply(JSON.parse((m as MessageEvent<string>).data) as EventBatch);
    });
    es.addEventListener('reset', () => {
      lastMessage = Date.now();
      reload().catch((err: unknown) => store.setConnection('lost', String(err)));
    });
    es.addEventListener('ping', () => {
      lastMessage = Date.now();
    });
    es.onerror = () => {
      // CONNECTING: the browser retries by itself. CLOSED: it gave up (an HTTP error): we retry.
      store.setConnection('lost', es.readyState === EventSource.CLOSED ? 'the event stream was refused' : 'connection lost, reconnecting…');
      if (es.readyState === EventSource.CLOSED) restart();
    };
  };

  const restart = (): void => {
    source?.close();
    clearTimeout(retryTimer);
    retryTimer = setTimeout(() => {
      // The snapshot is reloaded only if the cursor is no longer served: open() resumes from it.
      open();
    }, retryMs);
    retryMs = Math.min(retryMs * 2, 10_000);
  };

  const watchdog = setInterval(() => {
    if (source && source.readyState === EventSource.OPEN && Date.now() - lastMessage > SILENCE_MS) {
      store.setConnection('lost', 'no message from the server, reconnecting…');
      restart();
    }
  }, 5_000);

  const start = async (): Promise<void> => {
    for (;;) {
      try {
        await reload();
        open();
        return;
      } catch (err) {
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
    source?.close();
  };
}
