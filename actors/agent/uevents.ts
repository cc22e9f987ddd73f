import type { Logger } from 'pino';
import { WatchedCommand } from '../../drivers/index.js';
import { UeventParser, type Uevent } from './uevent-parser.js';

/**
 * What a burst of kernel events amounted to, handed over once the burst is over: how many events,
 * of which actions, about which devices (the first few), and whether it is the catch-up after
 * the monitor was down (events may have been missed then).
 */
export interface UeventBurst {
  events: number;
  actions: Record<string, number>;
  devices: string[];
  malformed: number;
  catchUp: boolean;
}

export interface UeventSourceOptions {
  /** udevadm's argv (`[agent] udevadm_command`); `monitor --kernel --property --subsystem-match=…` is appended. */
  command: readonly string[];
  /** The kernel subsystems whose events matter to the enabled drivers (pci, mdev). */
  subsystems: readonly string[];
  /** After an event, wait this long for the burst to go quiet (an SR-IOV enable is dozens of events). */
  quietMs?: number;
  /** …but never longer than this after its first event: a steady trickle still gets discoveries. */
  maxDelayMs?: number;
  /** First retry after udevadm could not start or died; doubled after each failure up to `retryMaxMs`. */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** Environment of the command (the test's stand-in reads its script from it). */
  env?: NodeJS.ProcessEnv;
}

/** The kernel's actions that change what a host has: a device came, went, or changed driver or state. */
const ACTIONS = new Set(['add', 'remove', 'change', 'move', 'bind', 'unbind']);
const DEVICES_NAMED = 8;

/**
 * Kernel uevents of the host, through `udevadm monitor --kernel --property` (Node has no
 * NETLINK_KOBJECT_UEVENT socket). Each burst of relevant events is handed to `onBurst` once, when
 * it goes quiet. If udevadm is missing or dies, that is logged once per outage with the reason
 * and it is tried again with a doubling back-off; when it runs again, a catch-up burst is handed
 * over, since events of the outage are lost. The periodic scan covers the outage meanwhile.
 */
export class UeventSource {
  private readonly command: WatchedCommand;
  private parser = new UeventParser();
  private stopped = true;
  private quietTimer: NodeJS.Timeout | undefined;
  private burst: UeventBurst | undefined;
  private burstStarted = 0;
  private readonly subsystems: ReadonlySet<string>;
  private readonly quietMs: number;
  private readonly maxDelayMs: number;

  constructor(private readonly opts: UeventSourceOptions & { log: Logger; onBurst: (burst: UeventBurst) => void }) {
    this.subsystems = new Set(opts.subsystems);
    this.quietMs = opts.quietMs ?? 200;
    this.maxDelayMs = opts.maxDelayMs ?? 2_000;
    this.command = new WatchedCommand({
      argv: this.argv,
      log: opts.log,
      env: opts.env,
      retryMinMs: opts.retryMinMs,
      retryMaxMs: opts.retryMaxMs,
      messages: {
        up: 'hot-plug: watching kernel events',
        back: 'hot-plug: kernel events are back; discovering what the outage hid',
        down: 'hot-plug: no kernel events; the periodic scan finds changes until udevadm runs again',
        again: 'hot-plug: udevadm failed again',
      },
      onData: (chunk) => {
        for (const ev of this.parser.push(chunk)) this.note(ev);
        this.noteMalformed();
      },
      // A restarted monitor starts a fresh stream: what the dead one left half-printed ends here.
      onEnd: () => {
        for (const ev of this.parser.end()) this.note(ev);
        this.noteMalformed();
        this.parser = new UeventParser();
      },
      // Back after an outage: one catch-up discovery covers what it missed.
      onUp: (outage) => {
        if (outage && !this.stopped) this.opts.onBurst({ events: 0, actions: {}, devices: [], malformed: 0, catchUp: true });
      },
    });
  }

  /** The argv run: the configured command and the monitor's arguments. */
  get argv(): string[] {
    return [...this.opts.command, 'monitor', '--kernel', '--property', ...[...this.opts.subsystems].map((s) => `--subsystem-match=${s}`)];
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.command.start();
  }

  /** Stops the monitor and waits for udevadm to exit; a burst not yet handed over is dropped. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.quietTimer);
    this.quietTimer = this.burst = undefined;
    await this.command.stop();
  }

  private note(ev: Uevent): void {
    if (!this.subsystems.has(ev.subsystem) || !ACTIONS.has(ev.action)) return;
    const b = this.open();
    b.events++;
    b.actions[ev.action] = (b.actions[ev.action] ?? 0) + 1;
    const device = ev.properties.PCI_SLOT_NAME ?? ev.devpath.slice(ev.devpath.lastIndexOf('/') + 1);
    if (b.devices.length < DEVICES_NAMED && !b.devices.includes(device)) b.devices.push(device);
    this.rearm();
  }

  /** Garbage in the stream is reported with the burst it came in, and makes none of its own. */
  private noteMalformed(): void {
    const parser = this.parser;
    if (parser.malformed === 0) return;
    if (this.burst) this.burst.malformed += parser.malformed;
    else this.opts.log.warn({ lines: parser.malformed }, 'hot-plug: udevadm printed lines that are not kernel events; skipped');
    parser.malformed = 0;
  }

  private open(): UeventBurst {
    if (!this.burst) {
      this.burst = { events: 0, actions: {}, devices: [], malformed: 0, catchUp: false };
      this.burstStarted = Date.now();
    }
    return this.burst;
  }

  private rearm(): void {
    clearTimeout(this.quietTimer);
    const wait = Math.max(0, Math.min(this.quietMs, this.burstStarted + this.maxDelayMs - Date.now()));
    this.quietTimer = setTimeout(() => this.flush(), wait);
    this.quietTimer.unref();
  }

  private flush(): void {
    const b = this.burst;
    this.burst = this.quietTimer = undefined;
    if (b && !this.stopped) this.opts.onBurst(b);
  }
}
