import { LineSplitter } from '../lines.js';

/**
 * NVIDIA XID events as the kernel log carries them. The driver (NVRM) prints one line per event:
 * `NVRM: Xid (PCI:0000:3b:00): 79, pid=…, name=…, GPU has fallen off the bus.` — the GPU's PCI
 * domain:bus:device (older drivers leave out `PCI:`), the XID code, then free text. `dmesg` puts a
 * `[seconds]` stamp before it and `journalctl -k` a date and `kernel:`; both are skipped.
 */

export type XidVerdict = 'fatal' | 'transient' | 'ignored';

export interface XidEvent {
  /** domain:bus:device of the GPU, lower case (`0000:3b:00`); its functions share it. */
  pciPrefix: string;
  code: number;
  text: string;
  verdict: XidVerdict;
}

/**
 * How each XID is judged, after NVIDIA's XID catalogue and its resolution buckets:
 * - fatal: the GPU is not usable until it is reset or the node rebooted — 48 (double-bit ECC),
 *   61 / 62 (an internal micro-controller stopped), 64 (a row remapping could not be recorded),
 *   74 (an NVLink error), 79 (fallen off the bus), 95 (an uncontained ECC error), 119 / 120 (the
 *   GSP timed out or failed), 140 (an unrecovered ECC error);
 * - ignored: a record, not a fault — 63 (a row was marked for remapping at the next reset);
 * - transient, everything else: the application's own faults that the next one does not inherit —
 *   13 (graphics engine exception), 31 (memory page fault), 43 (GPU stopped processing: the
 *   channel was reset), 45 (cleanup after an earlier error), 94 (a contained ECC error: only the
 *   application that touched it is affected) — and codes this table does not know: one degrades
 *   the device, and it comes back once stable, so an unknown code never takes a GPU out for good.
 * 154 (recovery action changed) names the new action in its text: a reset, a reboot or a drain is
 * fatal; none is ignored.
 */
const FATAL = new Set([48, 61, 62, 64, 74, 79, 95, 119, 120, 140]);
const IGNORED = new Set([63]);

export function classifyXid(code: number, text: string): XidVerdict {
  if (code === 154) {
    // "changed from 0x0 (None) to 0x1 (GPU Reset Required)": the action it changed to is the one that holds.
    const now = /\bto\s+0x[0-9a-f]+\s*\(([^)]*)\)/i.exec(text)?.[1] ?? text;
    return /reset|reboot|drain/i.test(now) ? 'fatal' : 'ignored';
  }
  if (FATAL.has(code)) return 'fatal';
  if (IGNORED.has(code)) return 'ignored';
  return 'transient';
}

const XID = /NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?\): (\d{1,5}),\s*(.*)$/;
const MAX_TEXT = 200;

/** One kernel log line's XID event, or undefined when the line is not one. */
export function parseXidLine(line: string): XidEvent | undefined {
  const m = XID.exec(line);
  if (!m) return undefined;
  const code = Number(m[2]);
  const text = m[3]!.trim().slice(0, MAX_TEXT);
  return { pciPrefix: m[1]!.toLowerCase(), code, text, verdict: classifyXid(code, text) };
}

/**
 * Reads the kernel log as it comes, in chunks cut anywhere. Lines that are not XID events are the
 * rest of the kernel's log and pass silently; a line that names NVRM's Xid but does not parse, or
 * an overlong one, is counted in `malformed` and skipped, never thrown.
 */
export class XidParser {
  malformed = 0;
  private readonly lines = new LineSplitter();

  push(chunk: string): XidEvent[] {
    const out: XidEvent[] = [];
    this.lines.push(chunk, (l) => this.line(l, out));
    this.takeOverlong();
    return out;
  }

  /** At the end of the stream: the last line, when the command died before its newline. */
  end(): XidEvent[] {
    const out: XidEvent[] = [];
    this.lines.end((l) => this.line(l, out));
    return out;
  }

  private takeOverlong(): void {
    this.malformed += this.lines.overlong;
    this.lines.overlong = 0;
  }

  private line(line: string, out: XidEvent[]): void {
    const ev = parseXidLine(line);
    if (ev) out.push(ev);
    else if (line.includes('NVRM: Xid')) this.malformed++;
  }
}
