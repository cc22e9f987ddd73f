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
 * How each XID is judged by default, after NVIDIA's XID catalogue and its resolution buckets:
 * - fatal: the GPU is not usable until it is reset or the node rebooted — 48 (double-bit ECC),
 *   61 / 62 (an internal micro-controller stopped), 64 (a row remapping could not be recorded),
 *   74 (an NVLink error), 79 (fallen off the bus), 95 (an uncontained ECC error), 119 / 120 (the
 *   GSP timed out or failed), 140 (an unrecovered ECC error);
 * - ignored (logged and counted in the metrics, never held against the GPU): 63 (a row was
 *   marked for remapping at the next reset: a record, not a fault) and the application's own
 *   faults, which the next tenant does not inherit — 13 (graphics engine exception: an
 *   out-of-range access in the tenant's kernel), 31 (memory page fault: the tenant's bad
 *   pointer), 43 (GPU stopped processing: the tenant's channel was reset), 45 (cleanup after an
 *   earlier error); three of a tenant's crashes must not quarantine the card under them;
 * - transient, everything else: 94 (a contained ECC error: only the application that touched it
 *   is affected, but a card that keeps having them is failing) and codes this table does not
 *   know: one degrades the device, enough of them quarantine it, and it comes back once stable,
 *   so an unknown code never takes a GPU out for good.
 * 154 (recovery action changed) names the new action in its text: a reset, a reboot or a drain is
 * fatal; none is ignored — unless a policy names 154 itself.
 * `[gpu_devices] xid_fatal | xid_transient | xid_ignored` move codes between the classes
 * (config/xid.ts checks them at start-up).
 */
export interface XidPolicy {
  fatal: ReadonlySet<number>;
  ignored: ReadonlySet<number>;
  /** Codes an operator named as transient (only 154 needs it: the rest default to transient). */
  transient: ReadonlySet<number>;
}

export const DEFAULT_XID_POLICY: XidPolicy = Object.freeze({
  fatal: new Set([48, 61, 62, 64, 74, 79, 95, 119, 120, 140]),
  ignored: new Set([13, 31, 43, 45, 63]),
  transient: new Set<number>(),
});

/** The default policy with the operator's lists laid over it: a code named in a list leaves the others. */
export function xidPolicy(lists: { fatal?: readonly number[]; transient?: readonly number[]; ignored?: readonly number[] } = {}): XidPolicy {
  const named = new Set([...(lists.fatal ?? []), ...(lists.transient ?? []), ...(lists.ignored ?? [])]);
  const keep = (defaults: ReadonlySet<number>, mine: readonly number[] = []): Set<number> => new Set([...[...defaults].filter((c) => !named.has(c)), ...mine]);
  return {
    fatal: keep(DEFAULT_XID_POLICY.fatal, lists.fatal),
    ignored: keep(DEFAULT_XID_POLICY.ignored, lists.ignored),
    transient: new Set(lists.transient ?? []),
  };
}

export function classifyXid(code: number, text: string, policy: XidPolicy = DEFAULT_XID_POLICY): XidVerdict {
  if (policy.fatal.has(code)) return 'fatal';
  if (policy.ignored.has(code)) return 'ignored';
  if (policy.transient.has(code)) return 'transient';
  if (code === 154) {
    // "changed from 0x0 (None) to 0x1 (GPU Reset Required)": the action it changed to is the one that holds.
    const now = /\bto\s+0x[0-9a-f]+\s*\(([^)]*)\)/i.exec(text)?.[1] ?? text;
    return /reset|reboot|drain/i.test(now) ? 'fatal' : 'ignored';
  }
  return 'transient';
}

const XID = /NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?\): (\d{1,5}),\s*(.*)$/;
const MAX_TEXT = 200;

/** One kernel log line's XID event, or undefined when the line is not one. */
export function parseXidLine(line: string, policy: XidPolicy = DEFAULT_XID_POLICY): XidEvent | undefined {
  const m = XID.exec(line);
  if (!m) return undefined;
  const code = Number(m[2]);
  const text = m[3]!.trim().slice(0, MAX_TEXT);
  return { pciPrefix: m[1]!.toLowerCase(), code, text, verdict: classifyXid(code, text, policy) };
}

/**
 * Reads the kernel log as it comes, in chunks cut anywhere. Lines that are not XID events are the
 * rest of the kernel's log and pass silently; a line that names NVRM's Xid but does not parse, or
 * an overlong one, is counted in `malformed` and skipped, never thrown.
 */
export class XidParser {
  malformed = 0;
  private readonly lines = new LineSplitter();

  constructor(private readonly policy: XidPolicy = DEFAULT_XID_POLICY) {}

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
    const ev = parseXidLine(line, this.policy);
    if (ev) out.push(ev);
    else if (line.includes('NVRM: Xid')) this.malformed++;
  }
}
