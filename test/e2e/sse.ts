/** One Server-Sent Events message. */
export interface SseMessage {
  event: string;
  id?: string;
  data: string;
}

/**
 * A minimal SSE reader over fetch (Node has no EventSource): yields messages as they arrive.
 * Abort `signal` to hang up, as a browser tab that closes.
 */
export async function* readSse(url: string, signal: AbortSignal, headers: Record<string, string> = {}): AsyncGenerator<SseMessage> {
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal });
  if (!res.ok || !res.body) throw new Error(`event stream answered ${res.status}`);
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const msg: SseMessage = { event: 'message', data: '' };
      const data: string[] = [];
      for (const line of block.split('\n')) {
        const i = line.indexOf(':');
        if (i === 0) continue; // a comment
        const field = i < 0 ? line : line.slice(0, i);
        const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (field === 'event') msg.event = value;
        else if (field === 'id') msg.id = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length === 0) continue; // e.g. the `retry:` preamble
      msg.data = data.join('\n');
      yield msg;
    }
  }
}
