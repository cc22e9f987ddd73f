import type { BackendService, DeployableT, DeviceT } from '../model/index.js';

/** What a driver reports: Cyborg's device → deployable → attribute / attach handle model. */
export type DriverDevice = DeviceT;
export type DriverDeployable = DeployableT;

export interface DriverInfo {
  readonly name: string;
  readonly version: string;
}

/** What every driver can do: say who it is and discover its devices. */
export interface Driver extends DriverInfo {
  discover(): Promise<DriverDevice[]>;
}

/** Arguments of a per-accelerator operation. `key` is the idempotency key of the command. */
export interface OpRequest {
  key: string;
  deployable: DriverDeployable;
  params: Record<string, unknown>;
}

export type OpResult = Record<string, unknown>;

/** Makes one accelerator usable (`inactive → ready`) and gives it back (`ready → inactive`). */
export interface Installer {
  install(req: OpRequest): Promise<OpResult>;
  uninstall(req: OpRequest): Promise<OpResult>;
}

/** Loads a bitstream / function / profile (`ready → programmed`). */
export interface Programmer {
  program(req: OpRequest): Promise<OpResult>;
}

/** Prepares and releases what an instance needs to use an attach handle. Idempotent. */
export interface AttachPreparer {
  prepareAttach(req: OpRequest): Promise<OpResult>;
  releaseAttach(req: OpRequest): Promise<OpResult>;
}

export interface Health {
  deployableUuid: string;
  healthy: boolean;
  reason?: string;
  /**
   * How bad an unhealthy answer is, as the driver knows its hardware: `transient` (it may pass:
   * the conductor returns the device by itself once it is stable) or `fatal` (it stays out until
   * an operator resets it). Absent: transient.
   */
  severity?: 'transient' | 'fatal';
}

export interface HealthReporter {
  health(): Promise<Health[]>;
}

/** Resets one device (`nvidia-smi -r`, an FPGA reload) when an operator asks; never with an instance on it. */
export interface Resetter {
  reset(req: OpRequest): Promise<OpResult>;
}

/** One measurement of a deployable: utilisation as a fraction (0..1); what the driver cannot measure is left out. */
export interface Usage {
  deployableUuid: string;
  utilization: number;
  memoryUsedBytes?: number;
  memoryTotalBytes?: number;
  temperatureC?: number;
  powerW?: number;
}

export interface UsageReporter {
  usage(): Promise<Usage[]>;
}

/** Arguments of a host-level driver operation (install / uninstall / update of the driver itself). */
export interface LifecycleRequest {
  key: string;
  /** The version to install or update to; absent means the version the agent ships. */
  version?: string;
}

/**
 * Installs, removes and updates the driver itself on its host (kernel modules, helper packages,
 * firmware): the spec's install-driver / uninstall-driver / update-driver. Resolves with the
 * version now on the host. Idempotent: installing what is installed changes nothing.
 */
export interface DriverLifecycle {
  installDriver(req: LifecycleRequest): Promise<{ version: string }>;
  uninstallDriver(req: LifecycleRequest): Promise<void>;
  updateDriver(req: LifecycleRequest): Promise<{ version: string }>;
}

/** Lists the services of each device a backend manages (what `discover-services` asks for). */
export interface ServiceReporter {
  services(): Promise<BackendService[]>;
}

// Optional abilities are detected at run time rather than declared as methods that throw.
export const canInstall = (d: Driver): d is Driver & Installer => typeof (d as Partial<Installer>).install === 'function';
export const canProgram = (d: Driver): d is Driver & Programmer => typeof (d as Partial<Programmer>).program === 'function';
export const canAttach = (d: Driver): d is Driver & AttachPreparer => typeof (d as Partial<AttachPreparer>).prepareAttach === 'function';
export const canReportHealth = (d: Driver): d is Driver & HealthReporter => typeof (d as Partial<HealthReporter>).health === 'function';
export const canReset = (d: Driver): d is Driver & Resetter => typeof (d as Partial<Resetter>).reset === 'function';
export const canReportUsage = (d: Driver): d is Driver & UsageReporter => typeof (d as Partial<UsageReporter>).usage === 'function';
export const canManageLifecycle = (d: Driver): d is Driver & DriverLifecycle => typeof (d as Partial<DriverLifecycle>).installDriver === 'function';
export const canReportServices = (d: Driver): d is Driver & ServiceReporter => typeof (d as Partial<ServiceReporter>).services === 'function';
