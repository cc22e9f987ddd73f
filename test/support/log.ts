import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** One JSON log line as pino writes it. */
export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** A logger that says nothing, unless TEST_LOG_LEVEL asks (e.g. `TEST_LOG_LEVEL=debug` to read a failure). */
export function quietLogger(): Logger {
  return pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
}

/** A logger that keeps every line, so a test can assert what an operator would read. */
export function captureLogger(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as LogLine);
      cb();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines };
}

/**
 * The keys that occur twice in one object of a JSON text, at any depth. Read from the raw text,
 * not through JSON.parse: that keeps the last of two keys and hides the first, and strict
 * ingesters reject the whole line.
 */
export function duplicateKeys(json: string): string[] {
  const dups: string[] = [];
  // One frame per open object (its keys so far; a key comes next after `{` or `,`) or array (no keys).
  const open: { keys: Set<string> | null; keyNext: boolean }[] = [];
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '"') {
      let end = i + 1;
      while (json[end] !== '"') end += json[end] === '\\' ? 2 : 1;
      const top = open.at(-1);
      if (top?.keys && top.keyNext) {
        const key = JSON.parse(json.slice(i, end + 1)) as string;
        if (top.keys.has(key)) dups.push(key);
        top.keys.add(key);
        top.keyNext = false;
      }
      i = end;
    } else if (c === '{') open.push({ keys: new Set(), keyNext: true });
    else if (c === '[') open.push({ keys: null, keyNext: false });
    else if (c === '}' || c === ']') open.pop();
    else if (c === ',' && open.at(-1)?.keys) open.at(-1)!.keyNext = true;
  }
  return dups;
}
