/** No line a tool prints comes near this; a longer one is garbage and is not buffered further. */
const MAX_LINE = 16 * 1024;

/**
 * Cuts a command's output, handed over in chunks cut anywhere, into lines (a trailing `\r`
 * dropped). A line longer than `maxLine` is garbage: it is skipped up to its newline and counted
 * in `overlong`, never buffered without bound.
 */
export class LineSplitter {
  overlong = 0;
  private partial = '';
  private skipping = false;

  constructor(private readonly maxLine = MAX_LINE) {}

  /** Hands each line `chunk` completes to `line`. */
  push(chunk: string, line: (text: string) => void): void {
    const text = this.partial + chunk;
    let from = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; from = nl + 1, nl = text.indexOf('\n', from)) {
      if (this.skipping) {
        this.skipping = false;
        continue;
      }
      const l = text.slice(from, nl);
      line(l.endsWith('\r') ? l.slice(0, -1) : l);
    }
    let rest = text.slice(from);
    if (!this.skipping && rest.length > this.maxLine) {
      this.overlong++;
      this.skipping = true;
    }
    if (this.skipping) rest = '';
    this.partial = rest;
  }

  /** At the end of the stream: the last line, when it had no newline. */
  end(line: (text: string) => void): void {
    if (this.partial && !this.skipping) line(this.partial);
    this.partial = '';
    this.skipping = false;
  }
}
