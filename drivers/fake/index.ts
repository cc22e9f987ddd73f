import { setTimeout as delay } from 'node:timers/promises';
import type {
  AttachPreparer,
  Driver,
  DriverDevice,
  Health,
  HealthReporter,
  Installer,
  OpRequest,
  OpResult,
  Programmer,
  Resetter,
  Usage,
  UsageReporter,
} from '../driver.js';
import type { BoundHandle, BoundRestorer, HostObserver, Observation } from '../abilities.js';
import { sanitizeName, stableId } from '../../ids/index.js';
import type { AttachHandleT } from '../../model/index.js';
import { CyborgError } from '../../errors/index.js';

export interface FakeDriverOptions {
  host: string;
  /** Extra GPUs beside Cyborg's fake FPGA (resource class PGPU). */
  gpus?: number;
  /** Extra NICs, each with `vfsPerNic` virtual functions (one deployable per VF, as Intel's NIC driver). */
  nics?: number;
  vfsPerNic?: number;
  /** Every operation waits this long, for demos of the transient states. */
  opDelayMs?: number;
}

type Op = 'install' | 'uninstall' | 'program' | 'attach' | 'detach' | 'reset' | 'restore';

/**
 * A scripted health fault of one deployable: `transient` and `fatal` answer unhealthy at every
 * check (with that severity); `flapping` alternates unhealthy and healthy at every check.
 */
export type HealthFault = 'transient' | 'fatal' | 'flapping';

interface Fault {
  reason: string;
  remaining: number;
}

/** Cyborg's fake FPGA control path, byte for byte (no spaces). */
const FAKE_CPID = '{"domain":"0000","bus":"0c","device":"00","function":"0"}';

function pci(bus: string, device: number, fn: number): string {
  return JSON.stringify({ domain: '0000', bus, device: String(device), function: String(fn) })
    .replace(/":"/g, '": "')
    .replace(/","/g, '", "');
}

/**
 * The fake driver: OpenStack Cyborg's fake FPGA (one device, vendor 0xABCD, deployable
 * `<host>_FakeDevice`, RC FPGA ×16, trait CUSTOM_FAKE_DEVICE, 16 TEST_PCI handles) plus optional
 * GPUs and NICs with VFs. Everything is derived from the host name, so ids survive restarts.
 * Tests script it: set health, inject failures, slow operations down, unplug devices.
 */
export class FakeDriver implements Driver, Installer, Programmer, AttachPreparer, HealthReporter, UsageReporter, Resetter, HostObserver, BoundRestorer {
  readonly name = 'fake';
  readonly version = '1.0.0';
  private faults = new Map<Op, Fault>();
  private delays = new Map<Op | '*', number>();
  /** Delays of one deployable's operations (`<op>:<deployable uuid>`), before the op's own. */
  private deviceDelays = new Map<string, number>();
  private unhealthy = new Map<string, { fault: HealthFault; reason: string; checks: number }>();
  private unplugged = new Set<string>();
  /** Attachments per deployable: an attached device is busy in the usage it reports. */
  private attached = new Map<string, number>();
  /**
   * The attach handles whose host side exists (what a real driver's mdev or vfio binding is):
   * made by an attach or a restore, gone with a detach — and with the process, as a reboot
   * loses a host's mdevs. A new FakeDriver is a rebooted host.
   */
  private readonly made = new Set<string>();
  private devices: DriverDevice[];
  /** The operations the driver ran (the last 1,000 or more), in order: tests assert idempotency with it. */
  readonly calls: { op: Op; key: string; deployableUuid: string }[] = [];

  constructor(opts: FakeDriverOptions) {
    this.devices = buildDevices(opts);
    if (opts.opDelayMs) this.delays.set('*', opts.opDelayMs);
  }

  async discover(): Promise<DriverDevice[]> {
    return structuredClone(this.devices.filter((d) => !this.unplugged.has(d.uuid)));
  }

  install(req: OpRequest): Promise<OpResult> {
    return this.run('install', req, () => ({}));
  }

  uninstall(req: OpRequest): Promise<OpResult> {
    return this.run('uninstall', req, () => ({}));
  }

  program(req: OpRequest): Promise<OpResult> {
    return this.run('program', req, () => ({
      bitstreamId: req.params.bitstreamId ?? null,
      functionId: req.params.functionId ?? null,
    }));
  }

  prepareAttach(req: OpRequest): Promise<OpResult> {
    return this.run('attach', req, () => {
      this.attached.set(req.deployable.uuid, (this.attached.get(req.deployable.uuid) ?? 0) + 1);
      if (typeof req.params.handleUuid === 'string') this.made.add(req.params.handleUuid);
      return { handleUuid: req.params.handleUuid ?? null };
    });
  }

  releaseAttach(req: OpRequest): Promise<OpResult> {
    return this.run('detach', req, () => {
      const n = (this.attached.get(req.deployable.uuid) ?? 0) - 1;
      if (n > 0) this.attached.set(req.deployable.uuid, n);
      else this.attached.delete(req.deployable.uuid);
      if (typeof req.params.handleUuid === 'string') this.made.delete(req.params.handleUuid);
      return {};
    });
  }

  /** Every deployable it reports, with the handles made now; no card of its has a layout. */
  async observe(devices: readonly DriverDevice[]): Promise<Observation> {
    const deps = devices.flatMap((d) => d.deployables);
    return {
      deployables: deps.map((d) => d.uuid),
      present: deps.flatMap((d) => d.attachHandles.filter((h) => this.made.has(h.uuid)).map((h) => h.uuid)),
      cards: [],
    };
  }

  /** Makes the host side of handles an instance still holds again (fails as scripted with `injectFailure('restore', …)`). */
  async restoreBound(bound: readonly BoundHandle[]): Promise<{ restored: string[]; present: string[] }> {
    const restored: string[] = [];
    const present: string[] = [];
    for (const b of bound) {
      await this.run('restore', { key: `restore:${b.handleUuid}`, deployable: b.deployable, params: { handleUuid: b.handleUuid } }, () => ({}));
      if (this.made.has(b.handleUuid)) present.push(b.handleUuid);
      else {
        this.made.add(b.handleUuid);
        this.attached.set(b.deployable.uuid, (this.attached.get(b.deployable.uuid) ?? 0) + 1);
        restored.push(b.handleUuid);
      }
    }
    return { restored, present };
  }

  /** Whether the host side of an attach handle exists now (tests: "was the mdev re-created"). */
  hasHostSide(handleUuid: string): boolean {
    return this.made.has(handleUuid);
  }

  async health(): Promise<Health[]> {
    return this.devices
      .flatMap((d) => d.deployables)
      .map((dep) => {
        const f = this.unhealthy.get(dep.uuid);
        if (!f) return { deployableUuid: dep.uuid, healthy: true };
        const bad = f.fault !== 'flapping' || f.checks++ % 2 === 0;
        if (!bad) return { deployableUuid: dep.uuid, healthy: true };
        return { deployableUuid: dep.uuid, healthy: false, reason: f.reason, severity: f.fault === 'fatal' ? 'fatal' : 'transient' };
      });
  }

  /** Resets the device: a scripted fault of any kind is gone afterwards (unless the reset is made to fail). */
  reset(req: OpRequest): Promise<OpResult> {
    return this.run('reset', req, () => {
      this.unhealthy.delete(req.deployable.uuid);
      return {};
    });
  }

  async usage(): Promise<Usage[]> {
    const now = Date.now();
    return this.devices
      .filter((d) => !this.unplugged.has(d.uuid))
      .flatMap((d) => d.deployables.map((dep) => fakeUsage(d.type, dep.uuid, this.attached.get(dep.uuid) ?? 0, dep.numAccelerators, now)));
  }

  // --- test scripting ---------------------------------------------------------------------

  /** The next `times` calls of `op` fail with `reason`. */
  injectFailure(op: Op, reason: string, times = 1): void {
    this.faults.set(op, { reason, remaining: times });
  }

  /** Every call of `op` (or of all ops, `'*'`) waits `ms` first; with `deployableUuid`, only that deployable's. */
  slowDown(op: Op | '*', ms: number, deployableUuid?: string): void {
    if (deployableUuid) this.deviceDelays.set(`${op}:${deployableUuid}`, ms);
    else this.delays.set(op, ms);
  }

  setHealth(deployableUuid: string, healthy: boolean, reason = 'unhealthy'): void {
    if (healthy) this.unhealthy.delete(deployableUuid);
    else this.injectHealthFault(deployableUuid, 'transient', reason);
  }

  /** Scripts a health fault (see HealthFault); `recover` ends it. */
  injectHealthFault(deployableUuid: string, fault: HealthFault, reason = `scripted ${fault} fault`): void {
    this.unhealthy.set(deployableUuid, { fault, reason, checks: 0 });
  }

  /** Every later check of the deployable answers healthy. */
  recover(deployableUuid: string): void {
    this.unhealthy.delete(deployableUuid);
  }

  /**
   * Gives a deployable other traits from the next discovery on (another function programmed out
   * of band, a firmware that reports itself differently): its `trait*` attributes are replaced.
   */
  retrait(deployableUuid: string, traits: readonly string[]): void {
    for (const d of this.devices) {
      for (const dep of d.deployables) {
        if (dep.uuid !== deployableUuid) continue;
        dep.attributes = [...dep.attributes.filter((a) => !a.key.startsWith('trait')), ...traits.map((t, i) => ({ key: `traits${i + 1}`, value: t }))];
      }
    }
  }

  /**
   * Another card in the device's slot from the next discovery on (a hot-swap): it reports
   * `serial` as its own, or no serial at all (`null`: hardware that gives none). The slot, and so
   * every id, stays the same.
   */
  swapCard(deviceUuid: string, serial: string | null): void {
    for (const d of this.devices) {
      if (d.uuid !== deviceUuid) continue;
      if (serial === null) delete d.identity;
      else d.identity = { serial, source: 'fake serial' };
    }
  }

  /** Makes a device disappear from (or come back to) discovery. */
  unplug(deviceUuid: string, gone = true): void {
    if (gone) this.unplugged.add(deviceUuid);
    else this.unplugged.delete(deviceUuid);
  }

  private async run(op: Op, req: OpRequest, result: () => OpResult): Promise<OpResult> {
    this.calls.push({ op, key: req.key, deployableUuid: req.deployable.uuid });
    // A demo runs for days: keep the recent calls only — a thousand is more than any test reads,
    // and under load every entry kept is old-generation work for the GC (docs/persistence.md).
    // Trimmed in halves, not per call: splicing the front on every call costs more than the
    // operation it records.
    if (this.calls.length > 2_000) this.calls.splice(0, this.calls.length - 1_000);
    const ms = this.deviceDelays.get(`${op}:${req.deployable.uuid}`) ?? this.delays.get(op) ?? this.delays.get('*') ?? 0;
    if (ms > 0) await delay(ms);
    const fault = this.faults.get(op);
    if (fault && fault.remaining > 0) {
      fault.remaining--;
      throw new CyborgError('driver.failed', fault.reason);
    }
    return result();
  }
}

function handles(host: string, dep: string, n: number, type: AttachHandleT['attachType'], info: (i: number) => string): AttachHandleT[] {
  return Array.from({ length: n }, (_, k) => ({ uuid: stableId(host, dep, 'handle', String(k)), attachType: type, attachInfo: info(k + 1), inUse: false }));
}

function buildDevices(opts: FakeDriverOptions): DriverDevice[] {
  const host = opts.host;
  const fpgaName = sanitizeName(`${host}_FakeDevice`);
  const devices: DriverDevice[] = [
    {
      uuid: stableId(host, 'fake', FAKE_CPID),
      type: 'FPGA',
      vendor: '0xABCD',
      model: 'miss model info',
      stdBoardInfo: '{"device_id": "0xabcd", "class": "Fake class"}',
      vendorBoardInfo: 'fake_vendor_info',
      stub: false,
      controlPath: { type: 'PCI', info: FAKE_CPID },
      driver: 'fake',
      deployables: [
        {
          uuid: stableId(host, 'deployable', fpgaName),
          name: fpgaName,
          numAccelerators: 16,
          driverName: 'fake',
          attributes: [
            { key: 'rc', value: 'FPGA' },
            { key: 'traits1', value: 'CUSTOM_FAKE_DEVICE' },
          ],
          attachHandles: handles(host, fpgaName, 16, 'TEST_PCI', (n) => pci('0c', Math.floor(n / 8), n % 8)),
        },
      ],
    },
  ];
  for (let g = 0; g < (opts.gpus ?? 0); g++) devices.push(fakeGpu(host, g));
  for (let n = 0; n < (opts.nics ?? 0); n++) devices.push(fakeNic(host, n, opts.vfsPerNic ?? 4));
  return devices;
}

/** The g-th fake GPU of `host`: one deployable, one PCI handle. */
function fakeGpu(host: string, g: number): DriverDevice {
  const bus = (0x40 + g).toString(16).padStart(2, '0');
  const cpid = JSON.stringify({ bus, device: '00', domain: '0000', function: '0' });
  const name = sanitizeName(`${host}_fake_gpu_${bus}`);
  return {
    uuid: stableId(host, 'fake', cpid),
    type: 'GPU',
    vendor: '0xABCD',
    model: 'Fake GPU',
    stdBoardInfo: '{"device_id": "0xabce", "class": "3D controller"}',
    vendorBoardInfo: 'fake_vendor_info',
    stub: false,
    controlPath: { type: 'PCI', info: cpid },
    driver: 'fake',
    // As a GPU's UUID: what the card says about itself (Cyborg's fake FPGA says nothing).
    identity: { serial: `FAKE-${stableId(host, 'gpu-serial', bus).slice(0, 13)}`, source: 'fake serial' },
    deployables: [
      {
        uuid: stableId(host, 'deployable', name),
        name,
        numAccelerators: 1,
        driverName: 'fake',
        attributes: [
          { key: 'rc', value: 'PGPU' },
          { key: 'traits1', value: 'CUSTOM_FAKE_GPU' },
        ],
        attachHandles: handles(host, name, 1, 'PCI', () => pci(bus, 0, 0)),
      },
    ],
  };
}

/** The n-th fake NIC of `host`: one deployable per VF. */
function fakeNic(host: string, n: number, vfs: number): DriverDevice {
  const bus = (0x80 + n).toString(16).padStart(2, '0');
  const cpid = JSON.stringify({ bus, device: '00', domain: '0000', function: '0' });
  return {
    uuid: stableId(host, 'fake', cpid),
    type: 'NIC',
    vendor: '0xABCD',
    model: 'Fake NIC',
    stdBoardInfo: '{"device_id": "0xabcf", "class": "Ethernet controller"}',
    vendorBoardInfo: 'fake_vendor_info',
    stub: false,
    controlPath: { type: 'PCI', info: cpid },
    driver: 'fake',
    deployables: Array.from({ length: vfs }, (_, v) => {
      const name = sanitizeName(`${host}_fake_nic_${bus}_vf${v}`);
      return {
        uuid: stableId(host, 'deployable', name),
        name,
        numAccelerators: 1,
        driverName: 'fake',
        attributes: [
          { key: 'rc', value: 'CUSTOM_NIC' },
          { key: 'traits1', value: 'CUSTOM_VF' },
          { key: 'traits2', value: 'CUSTOM_FAKE_NIC' },
        ],
        attachHandles: handles(host, name, 1, 'PCI', () => pci(bus, 1 + Math.floor(v / 8), v % 8)),
      };
    }),
  };
}

/** What each kind of fake device measures: its memory (none for a NIC's VF), idle and full temperature and power. */
const USAGE_PROFILES: Record<string, { memoryGiB?: number; temperatureC?: [number, number]; powerW?: [number, number] }> = {
  GPU: { memoryGiB: 16, temperatureC: [32, 82], powerW: [35, 285] },
  FPGA: { memoryGiB: 8, temperatureC: [40, 71], powerW: [22, 75] },
};

/**
 * A plausible, moving measurement of one deployable for demos: idle at a few percent while nothing
 * is attached, busy (and hotter, hungrier) in proportion to its attachments, wandering on two slow
 * waves with a phase of its own so that no two devices move together. Deterministic in the clock.
 */
function fakeUsage(type: string, uuid: string, attached: number, capacity: number, now: number): Usage {
  let phase = 0;
  for (let i = 0; i < uuid.length; i++) phase = (phase * 31 + uuid.charCodeAt(i)) % 6283;
  const t = now / 1000 + phase;
  const wave = (Math.sin(t / 17) + Math.sin(t / 5.3) * 0.4 + 1.4) / 2.8; // 0..1
  const load = Math.min(1, attached / Math.max(1, capacity));
  const util = load > 0 ? Math.min(1, 0.45 * load + 0.5 * wave + 0.05) : 0.01 + 0.05 * wave;
  const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;
  const u: Usage = { deployableUuid: uuid, utilization: round(util, 3) };
  const p = USAGE_PROFILES[type];
  if (p?.memoryGiB !== undefined) {
    const total = p.memoryGiB * 1024 ** 3;
    u.memoryTotalBytes = total;
    u.memoryUsedBytes = Math.round(total * (load > 0 ? 0.2 + 0.7 * util : 0.02));
  }
  if (p?.temperatureC) u.temperatureC = round(p.temperatureC[0] + (p.temperatureC[1] - p.temperatureC[0]) * util, 1);
  if (p?.powerW) u.powerW = round(p.powerW[0] + (p.powerW[1] - p.powerW[0]) * util, 1);
  return u;
}
