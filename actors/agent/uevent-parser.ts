import { LineSplitter } from '../../drivers/index.js';

/**
 * One kernel uevent as `udevadm monitor --kernel --property` prints it: a header line
 * `KERNEL[<seconds>.<micros>] <action> <devpath> (<subsystem>)` (the action padded to 8 columns),
 * the event's `KEY=VALUE` properties one per line, and a blank line after each event.
 */
export interface Uevent {
  action: string;
  devpath: string;
  subsystem: string;
  /** ACTION, DEVPATH, SUBSYSTEM, SEQNUM and what the subsystem adds (PCI_SLOT_NAME, DRIVER, MDEV_TYPE, …). */
  properties: Record<string, string>;
}

const HEADER = /^(?:KERNEL|UDEV)\s*\[\d+\.\d+\]\s+(\S+)\s+(\/.*?)\s+\(([^()\s]*)\)$/;
const PROPERTY = /^([A-Za-z0-9_.]+)=(.*)$/;
/** What udevadm prints once before the first event. */
const PREAMBLE = /^(monitor will print the received events for:|KERNEL - the kernel uevent|UDEV - the event which udev sends out after rule processing)$/;
/** No line of a real event comes near this; a longer one is garbage and is not buffered further. */
const MAX_LINE = 16 * 1024;
const MAX_PROPERTIES = 256;

/**
 * Reads udevadm's output as it comes, in chunks cut anywhere. A block whose header is not an
 * event's, a line that is not `KEY=VALUE`, an overlong line: each is counted in `malformed` and
 * skipped, never thrown, so a garbled stream costs the events it garbled and nothing else.
 */
export class UeventParser {
  /** Lines and blocks skipped because they were not what udevadm prints. */
  malformed = 0;
  private readonly lines = new LineSplitter(MAX_LINE);
  private current: Uevent | undefined;
  /** Inside a block whose header was bad: its lines are skipped up to the blank line. */
  private skipping = false;

  /** The events completed by `chunk`. */
  push(chunk: string): Uevent[] {
    const out: Uevent[] = [];
    this.lines.push(chunk, (l) => this.line(l, out));
    this.malformed += this.lines.overlong;
    this.lines.overlong = 0;
    return out;
  }

  /** At the end of the stream: the last event, when udevadm died before its blank line. */
  end(): Uevent[] {
    const out: Uevent[] = [];
    this.lines.end((l) => this.line(l, out));
    this.finish(out);
    this.skipping = false;
    return out;
  }

  private line(line: string, out: Uevent[]): void {
    if (line.trim() === '') {
      this.finish(out);
      this.skipping = false;
      return;
    }
    const header = HEADER.exec(line);
    if (header) {
      // A header with no blank line before it still starts a new event.
      this.finish(out);
      this.skipping = false;
      this.current = { action: header[1]!, devpath: header[2]!, subsystem: header[3]!, properties: {} };
      return;
    }
    if (this.current) {
      const prop = PROPERTY.exec(line);
      if (prop && Object.keys(this.current.properties).length < MAX_PROPERTIES) this.current.properties[prop[1]!] = prop[2]!;
      else this.malformed++;
      return;
    }
    if (this.skipping || PREAMBLE.test(line)) return;
    this.malformed++;
    this.skipping = true;
  }

  private finish(out: Uevent[]): void {
    const ev = this.current;
    this.current = undefined;
    if (!ev) return;
    // The properties are the kernel's own words; the header is udevadm's summary of them.
    const p = ev.properties;
    out.push({ action: p.ACTION ?? ev.action, devpath: p.DEVPATH ?? ev.devpath, subsystem: p.SUBSYSTEM ?? ev.subsystem, properties: p });
  }
}
