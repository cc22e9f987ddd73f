import type { Logger } from 'pino';
import type { Driver, DriverDevice, Health, OpRequest, OpResult } from './driver.js';

/**
 * Optional abilities of the vendor drivers, beside those of `driver.ts`, detected at run time the
 * same way: a driver that lacks one simply has no such method.
 */

/** An attach handle an ARQ still holds, as the agent knows it after a restart. */
export interface BoundHandle {
  deployable: OpRequest['deployable'];
  handleUuid: string;
}

/**
 * After a reboot the kernel has forgotten what the driver made for bound ARQs (mdevs, vGPU types
 * of VFs): the agent hands the bound handles back and the driver makes them again. Idempotent.
 */
export interface BoundRestorer {
  restoreBound(bound: readonly BoundHandle[]): Promise<{ restored: string[]; present: string[] }>;
}

/** Progress of a long operation (an FPGA programming), as the tool reports it; `fetch` is the agent's download from Glance. */
export interface Progress {
  phase: 'fetch' | 'verify' | 'program' | 'rollback' | 'done';
  message: string;
}

/** A driver whose cards run image files it must keep on disk (the rollback targets of the FPGA drivers). */
export interface ImageHolder {
  imagesInUse(): Promise<string[]>;
}

export const canHoldImages = (d: Driver): d is Driver & ImageHolder => typeof (d as Partial<ImageHolder>).imagesInUse === 'function';

/** A programmer that reports progress while it works. */
export interface ProgressProgrammer {
  program(req: OpRequest, opts?: { onProgress?: (p: Progress) => void }): Promise<OpResult>;
}

/** The MIG layout of a GPU, chosen by the operator, applied only while none of its instances is attached. */
export interface MigLayoutManager {
  applyMigLayout(address: string, profiles: readonly string[]): Promise<OpResult>;
  /** Re-applies every remembered layout a reboot lost. */
  reapplyMigLayouts(): Promise<OpResult[]>;
}

/** The VF count of an SR-IOV physical function, changed only while none of its VFs is attached. */
export interface VfCountManager {
  setVfCount(address: string, count: number): Promise<OpResult>;
  /** Re-applies every remembered count a reboot lost. */
  reapplyVfCounts(): Promise<OpResult[]>;
}

/** What a driver sees on the host now of the devices it reported (bus/schemas.ts HostObservation). */
export interface Observation {
  /** The deployables it looked at. */
  deployables: string[];
  /** Their attach handles whose host side exists now (an mdev, a vGPU-typed VF, a made attachment). */
  present: string[];
  /** Each card's layout where it has one: MIG profiles of its GPU instances, or its VF count. */
  cards: { deviceUuid: string; migLayout?: string[]; vfCount?: number }[];
}

/**
 * Looks at the host side of the devices it reported, without changing anything: what the
 * conductor compares with its records when the agent re-joins, to re-make what a reboot lost for
 * instances that still hold handles (restoreBound), even when the agent's own cache is gone.
 */
export interface HostObserver {
  observe(devices: readonly DriverDevice[]): Promise<Observation>;
}

export const canObserve = (d: Driver): d is Driver & HostObserver => typeof (d as Partial<HostObserver>).observe === 'function';
export const canRestoreBound = (d: Driver): d is Driver & BoundRestorer => typeof (d as Partial<BoundRestorer>).restoreBound === 'function';
export const canManageMig = (d: Driver): d is Driver & MigLayoutManager => typeof (d as Partial<MigLayoutManager>).applyMigLayout === 'function';
export const canSetVfCount = (d: Driver): d is Driver & VfCountManager => typeof (d as Partial<VfCountManager>).setVfCount === 'function';

/** A watch of health signals under way; stopping it ends its command. */
export interface HealthWatch {
  stop(): Promise<void>;
}

/**
 * Health signals the driver learns of as they happen (the NVIDIA driver's XID events from the
 * kernel log), handed to `onSignals` at once instead of waiting for the next `health()` poll.
 * Undefined when the driver has nothing to watch (not configured).
 */
export interface HealthWatcher {
  watchHealth(onSignals: (signals: Health[]) => void, log: Logger): HealthWatch | undefined;
}

export const canWatchHealth = (d: Driver): d is Driver & HealthWatcher => typeof (d as Partial<HealthWatcher>).watchHealth === 'function';

/** A device the driver sees but could not observe whole this time, and why, in the tool's own words. */
export interface UnobservedDevice {
  deviceUuid: string;
  reason: string;
  /** What the driver could still tell of it (sysfs alone): used where the agent has no earlier record. */
  partial?: DriverDevice;
}

/** What a discovery observed, and which devices it could not (the rest of the driver's report stands). */
export interface PartialDiscovery {
  devices: DriverDevice[];
  unobserved: UnobservedDevice[];
}

/**
 * A driver that can tell, device by device, what it could not observe (one GPU's vGPU type is
 * wrong, nvidia-smi fails while sysfs answers): the agent keeps those devices' last observed
 * records, marked, instead of losing the driver's whole report.
 */
export interface PartialDiscoverer {
  discoverPartial(): Promise<PartialDiscovery>;
}

export const canDiscoverPartially = (d: Driver): d is Driver & PartialDiscoverer => typeof (d as Partial<PartialDiscoverer>).discoverPartial === 'function';
