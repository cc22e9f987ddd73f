/** One Server-Sent Events message, as EventSource would dispatch it. */
export interface SseMessage {
  event: string;
  data: string;
  /** The stream's last event id after this message (the `id:` of this one or an earlier one). */
  lastEventId: string;
}

/** The stream was answered with an HTTP error (401: the token is no longer good). */
export class SseHttpError extends Error {
  constructor(readonly status: number) {
    super(`the event stream was refused (${status})`);
    this.name = 'SseHttpError';
  }
}

export interface SseOptions {
  /** Sent with the request (X-Auth-Token): what EventSource cannot do. */
  headers?: Record<string, string>;
  /** Sent as `Last-Event-ID`, so that the server resumes after it. */
  lastEventId?: string;
  onOpen: () => void;
  onMessage: (m: SseMessage) => void;
  /** The connection ended: `err` is why (SseHttpError for an HTTP answer), or null when the server closed it. Not called after close(). */
  onClose: (err: unknown) => void;
}

/**
 * Parses the event-stream format (HTML's "Server-sent events" § 9.2.6) from text chunks: lines
 * end in CRLF, LF or CR; `event`, `data`, `id` fields; comments start with a colon; a blank
 * line dispatches; a message without data only moves the last event id.
 */
export class SseParser {
  lastEventId = '';
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private pendingCR = false;

  constructor(
    private readonly emit: (m: SseMessage) => void,
    lastEventId = '',
  ) {
    this.lastEventId = lastEventId;
  }

  push(chunk: string): void {
    let text = chunk;
    // A CR at the end of the previous chunk and an LF at the start of this one are one line end.
    if (this.pendingCR && text.startsWith('\n')) text = text.slice(1);
    this.pendingCR = false;
    this.buffer += text;
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer[i];
      if (c !== '\n' && c !== '\r') continue;
      this.line(this.buffer.slice(start, i));
      if (c === '\r') {
        if (i + 1 === this.buffer.length) this.pendingCR = true;
        else if (this.buffer[i + 1] === '\n') i++;
      }
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.lastEventId = value;
    // `retry:` is the server's reconnection hint: the caller's backoff decides instead.
  }

  private dispatch(): void {
    const event = this.event || 'message';
    const data = this.data;
    this.event = '';
    this.data = [];
    if (data.length === 0) return;
    this.emit({ event, data: data.join('\n'), lastEventId: this.lastEventId });
  }
}

/**
 * One event-stream connection over fetch, with the headers EventSource cannot send. It does not
 * reconnect by itself: the caller does, with `lastEventId` from the last message, and its own
 * backoff. Returns the function that hangs up.
 */
export function openSse(url: string, o: SseOptions): () => void {
  const abort = new AbortController();
  const run = async (): Promise<void> => {
    const res = await fetch(url, {
      headers: { accept: 'text/event-stream', ...o.headers, ...(o.lastEventId ? { 'last-event-id': o.lastEventId } : {}) },
      cache: 'no-store',
      signal: abort.signal,
    });
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      throw new SseHttpError(res.status);
    }
    o.onOpen();
    const parser = new SseParser(o.onMessage, o.lastEventId);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      parser.push(value);
    }
  };
  run().then(
    () => !abort.signal.aborted && o.onClose(null),
    (err: unknown) => !abort.signal.aborted && o.onClose(err),
  );
  return () => abort.abort();
}
