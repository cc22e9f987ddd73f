import type { Logger } from 'pino';
import type { DriverDevice, Health } from '../driver.js';
import type { HealthWatch } from '../abilities.js';
import { WatchedCommand } from '../watched-command.js';
import { Counter, register } from 'prom-client';
import { XidParser, type XidEvent, type XidPolicy } from './xid.js';

/**
 * Xid events this agent read, by code and verdict: on prom-client's global registry, which each
 * role's /metrics includes (the agent's own; the all-in-one's). A code is a small number from
 * NVIDIA's catalogue, so the label stays bounded.
 */
const xidEvents =
  (register.getSingleMetric('cyborg_gpu_xid_events_total') as Counter<'code' | 'verdict'> | undefined) ??
  new Counter({
    name: 'cyborg_gpu_xid_events_total',
    help: 'NVIDIA Xid events read from the kernel log, by code and verdict (fatal, transient, ignored)',
    labelNames: ['code', 'verdict'] as const,
  });

export interface XidHealthOptions {
  /** argv of the kernel log follower (`[gpu_devices] xid_command`); empty: XIDs are not watched. */
  command: readonly string[];
  env?: NodeJS.ProcessEnv;
  retryMinMs?: number;
  policy?: XidPolicy;
}

/** Fatal XIDs remembered per GPU; a few per GPU at most, the first one's reason kept. */
interface FatalXid {
  code: number;
  text: string;
}

const reasonOf = (ev: { code: number; text: string }): string => `Xid ${ev.code}: ${ev.text || 'no detail'}`.slice(0, 240);

/**
 * The NVIDIA driver's health: XID events read from the kernel log as they come, each mapped from
 * the GPU's PCI address to the deployables discovered on it (a MIG GPU has several; they share the
 * fault). A fatal XID is pushed at once and then answered at every poll until the GPU is reset;
 * a transient one is pushed once, and the polls that follow answer healthy, which is what brings
 * the device back through the conductor's hysteresis.
 */
export class XidHealth {
  /** GPU (domain:bus:device) → its deployables, from the last discovery. */
  private byGpu = new Map<string, string[]>();
  private readonly fatal = new Map<string, FatalXid>();
  /** GPU → the identity it gave at the last discovery that gave one. */
  private readonly serials = new Map<string, string>();

  constructor(private readonly opts: XidHealthOptions) {}

  get enabled(): boolean {
    return this.opts.command.length > 0;
  }

  /**
   * What the last discovery found: each GPU's PCI address and its device. A GPU that says it is
   * another card than before (its UUID changed: a card swapped into the slot) starts without the
   * old card's fatal Xid.
   */
  discovered(gpus: readonly { address: string; device: DriverDevice }[]): void {
    this.byGpu = new Map(gpus.map(({ address, device }) => [gpuOf(address), device.deployables.map((dep) => dep.uuid)]));
    for (const { address, device } of gpus) {
      const serial = device.identity?.serial;
      if (!serial) continue;
      const gpu = gpuOf(address);
      const before = this.serials.get(gpu);
      if (before !== undefined && before !== serial) this.fatal.delete(gpu);
      this.serials.set(gpu, serial);
    }
  }

  /** Every discovered deployable's health now: a GPU with a fatal XID is unhealthy until reset. */
  health(): Health[] {
    const out: Health[] = [];
    for (const [gpu, uuids] of this.byGpu) {
      const f = this.fatal.get(gpu);
      for (const deployableUuid of uuids) {
        out.push(f ? { deployableUuid, healthy: false, severity: 'fatal', reason: reasonOf(f) } : { deployableUuid, healthy: true });
      }
    }
    return out;
  }

  /** The GPU of a deployable is reset: its fatal XID is forgotten. */
  cleared(deployableUuid: string): void {
    for (const [gpu, uuids] of this.byGpu) if (uuids.includes(deployableUuid)) this.fatal.delete(gpu);
  }

  watch(onSignals: (signals: Health[]) => void, log: Logger): HealthWatch | undefined {
    if (!this.enabled) return undefined;
    const parser = new XidParser(this.opts.policy);
    const take = (events: XidEvent[]): void => {
      if (parser.malformed > 0) {
        log.warn({ lines: parser.malformed }, 'xid: kernel log lines that name an Xid but do not read as one; skipped');
        parser.malformed = 0;
      }
      const signals = events.flatMap((ev) => this.signalsOf(ev, log));
      if (signals.length > 0) onSignals(signals);
    };
    const command = new WatchedCommand({
      argv: this.opts.command,
      log,
      env: this.opts.env,
      retryMinMs: this.opts.retryMinMs,
      messages: {
        up: 'xid: watching the kernel log for NVIDIA Xid events',
        back: 'xid: the kernel log is followed again; Xid events of the outage were not seen',
        down: 'xid: cannot follow the kernel log; GPU faults are seen only by the polls until it runs again',
        again: 'xid: the kernel log follower failed again',
      },
      onData: (chunk) => take(parser.push(chunk)),
      onEnd: () => take(parser.end()),
    });
    command.start();
    return { stop: () => command.stop() };
  }

  private signalsOf(ev: XidEvent, log: Logger): Health[] {
    const about = { gpu: ev.pciPrefix, xid: ev.code, verdict: ev.verdict, text: ev.text };
    xidEvents.inc({ code: String(ev.code), verdict: ev.verdict });
    if (ev.verdict === 'ignored') {
      log.info(about, 'xid: informational event; the GPU stays in service');
      return [];
    }
    if (ev.verdict === 'fatal' && !this.fatal.has(ev.pciPrefix)) this.fatal.set(ev.pciPrefix, { code: ev.code, text: ev.text });
    const uuids = this.byGpu.get(ev.pciPrefix);
    if (!uuids) {
      // Kept for when it is discovered (a fatal one); the event names a GPU this driver does not report.
      log.warn(about, 'xid: event for a GPU this driver has not discovered');
      return [];
    }
    log.warn({ ...about, deployables: uuids.length }, 'xid: GPU fault; reported at once');
    return uuids.map((deployableUuid) => ({
      deployableUuid,
      healthy: false,
      severity: ev.verdict === 'fatal' ? ('fatal' as const) : ('transient' as const),
      reason: reasonOf(ev),
    }));
  }
}

/** domain:bus:device of a device's PCI address (`0000:3b:00.0` → `0000:3b:00`). */
function gpuOf(address: string): string {
  return address.toLowerCase().replace(/\.[0-7]$/, '');
}
