import type {
  AttachPreparer,
  Driver,
  DriverDevice,
  DriverLifecycle,
  Installer,
  LifecycleRequest,
  OpRequest,
  OpResult,
  Programmer,
  ServiceReporter,
} from '../driver.js';
import { AllowList } from './allow-list.js';
import { discoverPci, type Discovery, type Placement } from './discover.js';
import { CommandOps, SimulatedOps, SysfsOps, type HostOps, type HostOpsCommands } from './host-ops.js';
import { parseAddress } from './pci.js';
import { servicesOf, type Programmed } from './services.js';
import { readPciFunctions, type PciFunction } from './sysfs.js';
import type { BackendService } from '../../model/index.js';
import { CyborgError } from '../../errors/index.js';

export { AllowList, AllowListError, type AllowEntry } from './allow-list.js';
export { discoverPci, type Discovery } from './discover.js';
export { dsnOf, macOf, pcieSerial, withIdentity } from './identity.js';
export { CommandOps, HostOpError, SimulatedOps, SysfsOps, type HostOps } from './host-ops.js';
export { pciInfo, pyJson } from './pci.js';
export { readPciFunction, readPciFunctions, type PciFunction, type MdevType } from './sysfs.js';
export { KIND_TABLE, kindOf, type KindRule } from './table.js';

export interface GenericDriverOptions {
  host: string;
  /** Where sysfs is mounted: `/sys` on a host, a fixture tree in tests. */
  sysfsRoot: string;
  /** Nova-style `passthrough_whitelist` JSON; empty for the built-in defaults. */
  allowList?: string;
  /** How host operations are carried out. */
  hostOps?: 'sysfs' | 'command' | 'simulate';
  /** The helper program for `command` mode (argv). */
  helper?: string[];
  commands?: HostOpsCommands;
  /** The kernel driver that makes functions assignable to instances. */
  vfioDriver?: string;
  version?: string;
  /** Injected host operations (tests); overrides `hostOps`. */
  ops?: HostOps;
}

/**
 * The generic driver of the generic-driver spec: hardware-agnostic PCI accelerators found in
 * sysfs (see docs/generic-driver.md). Enabling an accelerator binds its functions to vfio-pci,
 * disabling gives them back; attaching a vGPU creates its mdev; the driver itself is installed,
 * removed and updated on the host through the configured host operations.
 */
export class GenericDriver implements Driver, Installer, Programmer, AttachPreparer, DriverLifecycle, ServiceReporter {
  readonly name = 'generic';
  version: string;
  readonly ops: HostOps;
  private readonly allow: AllowList | null;
  private readonly vfio: string;
  private last: { discovery: Discovery; functions: PciFunction[] } | null = null;
  private readonly programmed: Programmed = new Map();

  constructor(private readonly opts: GenericDriverOptions) {
    this.version = opts.version ?? '1.0.0';
    this.allow = AllowList.fromJson(opts.allowList ?? '');
    this.vfio = opts.vfioDriver ?? 'vfio-pci';
    this.ops = opts.ops ?? makeOps(opts, this.vfio);
  }

  async discover(): Promise<DriverDevice[]> {
    return (await this.scan()).discovery.devices;
  }

  async services(): Promise<BackendService[]> {
    const { discovery, functions } = await this.scan();
    return servicesOf(this.opts.host, discovery, functions, this.programmed);
  }

  async install(req: OpRequest): Promise<OpResult> {
    const functions = await this.pciFunctions(req);
    for (const f of functions) await this.ops.bind(f, this.vfio);
    return { boundTo: this.vfio, functions };
  }

  async uninstall(req: OpRequest): Promise<OpResult> {
    const functions = await this.pciFunctions(req);
    for (const f of functions) await this.ops.release(f);
    return { released: functions };
  }

  async program(req: OpRequest): Promise<OpResult> {
    const at = await this.placement(req);
    const bitstreamId = str(req.params.bitstreamId);
    const functionId = str(req.params.functionId);
    const image = bitstreamId ?? functionId;
    if (!image) throw new CyborgError('request.invalid', 'program needs a bitstreamId or a functionId');
    await this.ops.program(at.pf, image);
    this.programmed.set(at.device.uuid, { ...(bitstreamId ? { bitstreamId } : {}), ...(functionId ? { functionId } : {}) });
    return { bitstreamId: bitstreamId ?? null, functionId: functionId ?? null };
  }

  async prepareAttach(req: OpRequest): Promise<OpResult> {
    const { handle, at } = await this.handle(req);
    if (handle.attachType === 'MDEV') await this.ops.createMdev(at.functions[0]!, at.mdevType!, handle.uuid);
    else await this.ops.bind(addressOf(handle.attachInfo), this.vfio);
    return { handleUuid: handle.uuid, attachType: handle.attachType, attachInfo: handle.attachInfo };
  }

  async releaseAttach(req: OpRequest): Promise<OpResult> {
    const { handle, at } = await this.handle(req);
    if (handle.attachType === 'MDEV') await this.ops.removeMdev(at.functions[0]!, at.mdevType!, handle.uuid);
    return { handleUuid: handle.uuid };
  }

  async installDriver(req: LifecycleRequest): Promise<{ version: string }> {
    const version = req.version ?? this.version;
    await this.ops.lifecycle('install', version);
    this.version = version;
    return { version };
  }

  async uninstallDriver(_req: LifecycleRequest): Promise<void> {
    await this.ops.lifecycle('uninstall', this.version);
  }

  async updateDriver(req: LifecycleRequest): Promise<{ version: string }> {
    const version = req.version ?? this.version;
    await this.ops.lifecycle('update', version);
    this.version = version;
    return { version };
  }

  private async scan(): Promise<{ discovery: Discovery; functions: PciFunction[] }> {
    const functions = await readPciFunctions(this.opts.sysfsRoot);
    const discovery = discoverPci(functions, { host: this.opts.host, driverName: this.name, allow: this.allow });
    this.last = { discovery, functions };
    return this.last;
  }

  /** Where a deployable lives; rescans once if it is not in the last discovery (agent restarted). */
  private async placement(req: OpRequest): Promise<Placement> {
    let at = this.last?.discovery.where.get(req.deployable.uuid);
    if (!at) at = (await this.scan()).discovery.where.get(req.deployable.uuid);
    if (!at) throw new CyborgError('driver.failed', `deployable ${req.deployable.name} is no longer on this host`);
    return at;
  }

  private async pciFunctions(req: OpRequest): Promise<string[]> {
    await this.placement(req);
    return req.deployable.attachHandles.filter((h) => h.attachType === 'PCI').map((h) => addressOf(h.attachInfo));
  }

  private async handle(req: OpRequest): Promise<{ handle: OpRequest['deployable']['attachHandles'][number]; at: Placement }> {
    const at = await this.placement(req);
    const uuid = str(req.params.handleUuid);
    const handle = req.deployable.attachHandles.find((h) => h.uuid === uuid);
    if (!handle) throw new CyborgError('driver.failed', `deployable ${req.deployable.name} has no attach handle ${uuid ?? '(none given)'}`);
    return { handle, at };
  }
}

function makeOps(opts: GenericDriverOptions, vfio: string): HostOps {
  switch (opts.hostOps ?? 'sysfs') {
    case 'simulate':
      return new SimulatedOps();
    case 'command':
      return new CommandOps(opts.helper ?? []);
    default:
      return new SysfsOps(opts.sysfsRoot, vfio, opts.commands);
  }
}

/** The address in a PCI attach-handle info (`{"bus": "3b", "device": "00", "domain": "0000", "function": "4"}`). */
export function addressOf(info: string): string {
  const j = JSON.parse(info) as Record<string, string>;
  const address = `${j.domain}:${j.bus}:${j.device}.${j.function}`;
  if (!parseAddress(address)) throw new CyborgError('driver.failed', `attach info ${info} names no PCI address`);
  return address;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}
