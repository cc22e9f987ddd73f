import type { Logger } from 'pino';
import type { AttachPreparer, Driver, DriverDevice, Health, HealthReporter, OpRequest, OpResult, Resetter } from '../driver.js';
import type {
  BoundHandle,
  BoundRestorer,
  HealthWatch,
  HealthWatcher,
  HostObserver,
  MigLayoutManager,
  Observation,
  PartialDiscoverer,
  PartialDiscovery,
  UnobservedDevice,
} from '../abilities.js';
import { cyborgDeployable, cyborgDevice, handleOf, mdevJson, pciHandle } from '../cyborg-report.js';
import { DriverError } from '../../errors/index.js';
import { runCommand, type CommandRunner } from '../exec.js';
import { readPciFunctions, withIdentity, type PciFunction } from '../generic/index.js';
import { Type } from '@sinclair/typebox';
import { StateFile } from '../state-file.js';
import { XidHealth } from './health.js';
import type { XidPolicy } from './xid.js';
import { currentIds, replaceLayout, resolveLayout, Smi } from './mig.js';
import { legacyPgpuTraits, migResourceClass, migTrait, NVIDIA_DRIVER_NAME, pgpuTrait } from './names.js';
import type { GpuInstance, SmiGpu } from './smi.js';
import { foreignMigVgpus, migVgpuParent } from './mig-vgpu.js';
import { capVfVgpus, createMdev, mdevExists, removeMdev, setVfVgpuType, typeNumber, vfVgpuType, vgpuOffer } from './vgpu.js';
import type { DeployableT } from '../../model/index.js';

export { migResourceClass, migTrait, pgpuTrait, vgpuTrait, vgpuTypeName } from './names.js';
export { parseLgi, parseLgip, parseQueryXml } from './smi.js';
export { DEFAULT_XID_POLICY, xidPolicy, type XidPolicy } from './xid.js';

export interface NvidiaGpuDriverOptions {
  host: string;
  sysfsRoot: string;
  /** `[gpu_devices] enabled_vgpu_types`, each with its `[vgpu_<type>] device_addresses`. */
  vgpuTypes?: Readonly<Record<string, readonly string[]>>;
  /** `[gpu_devices] filter_sriov_vfs`: SR-IOV VFs are not reported as pGPUs. */
  filterSriovVfs?: boolean;
  /** argv of nvidia-smi; empty: MIG is not looked at (no nvidia-smi needed). */
  nvidiaSmi?: readonly string[];
  commandTimeoutMs?: number;
  /** Where chosen MIG layouts are remembered for re-application after a reboot. */
  stateDir?: string;
  run?: CommandRunner;
  /** argv of the kernel log follower whose NVIDIA Xid lines are health events; empty: none watched. */
  xidCommand?: readonly string[];
  /** Environment of the follower (a test's stand-in reads its recorded lines from it). */
  xidEnv?: NodeJS.ProcessEnv;
  /** First retry after the follower could not start or died (doubled after each failure). */
  xidRetryMinMs?: number;
  /** Which Xid codes are fatal, transient or ignored (`[gpu_devices] xid_*`); absent: DEFAULT_XID_POLICY. */
  xidPolicy?: XidPolicy;
  /**
   * `[gpu_devices] mig_host_attach`: a MIG deployable's handle is handed out as its GPU instance,
   * for consumers on the host itself (containers, processes given the instance); off (default),
   * its bind makes the profile's MIG-backed vGPU for a VM (./mig-vgpu.ts).
   */
  migHostAttach?: boolean;
  /** `[gpu_devices] legacy_traits`: pGPUs also carry Cyborg ≤ 10.0.0's `CUSTOM_GPU_NVIDIA`, `CUSTOM_GPU_PRODUCT_ID_<PID>`. */
  legacyTraits?: boolean;
  /** Product id (lower-case hex) → model name, from pci.ids: the model when nvidia-smi does not say. */
  modelNames?: ReadonlyMap<string, string>;
}

/** What nvidia-smi said of the host's GPUs: those in MIG mode, their instances, profile names by `<gpu index>:<profile id>`, product names by address. */
interface MigState {
  gpus: Map<string, SmiGpu>;
  instances: GpuInstance[];
  names: Map<string, string>;
  products: Map<string, string>;
  /** nvidia-smi's GPU UUID by address: what the card says about itself (docs/drivers.md, Identity). */
  uuids: Map<string, string>;
}

const GPU_CLASSES = ['0300', '0302'];

/**
 * Cyborg's `nvidia_gpu_driver`: NVIDIA GPUs from sysfs as pGPUs (RC `PGPU`, `CUSTOM_NVIDIA_<PID>`)
 * or, for the addresses a vGPU type is configured for, as vGPUs (RC `VGPU`,
 * `CUSTOM_NVIDIA_<PID>_<TYPE>`), plus MIG: a MIG-enabled GPU reports one deployable per profile
 * of its GPU instances, bound as a MIG-backed vGPU. Mdevs are created on attach and removed on detach; docs/drivers.md.
 */
export class NvidiaGpuDriver
  implements Driver, PartialDiscoverer, AttachPreparer, BoundRestorer, HostObserver, MigLayoutManager, HealthReporter, HealthWatcher, Resetter
{
  readonly name = 'nvidia_gpu_driver';
  readonly version = '1.0.0';
  private readonly smi: Smi;
  private readonly typeOf = new Map<string, string>();
  /** Handle uuid → the deployable it belongs to, for every handle attached now. */
  private readonly bound = new Map<string, DeployableT>();
  private readonly layouts: StateFile<Record<string, string[]>>;
  private readonly xid: XidHealth;
  /** The cards in MIG mode at the last discovery: one without instances has an empty layout, not none. */
  private migCards = new Set<string>();
  /** GPUs nvidia-smi last said are not in MIG mode: sysfs alone tells all of them while it fails. */
  private plainGpus = new Set<string>();

  constructor(private readonly opts: NvidiaGpuDriverOptions) {
    for (const [type, addresses] of Object.entries(opts.vgpuTypes ?? {})) {
      for (const a of addresses) {
        if (this.typeOf.has(a)) throw new DriverError('driver.failed', `GPU ${a} is configured for two vGPU types`, { reason: 'config_invalid', address: a });
        this.typeOf.set(a, type);
      }
    }
    this.smi = new Smi(opts.nvidiaSmi ?? [], opts.run ?? runCommand, opts.commandTimeoutMs ?? 30_000);
    this.layouts = new StateFile(
      opts.stateDir,
      'nvidia-mig-layouts.json',
      Type.Record(Type.String(), Type.Array(Type.String({ maxLength: 64 }), { maxItems: 64 })),
    );
    this.xid = new XidHealth({ command: opts.xidCommand ?? [], env: opts.xidEnv, retryMinMs: opts.xidRetryMinMs, policy: opts.xidPolicy });
  }

  /** Every device, or the first reason one could not be observed (`discoverPartial` says which). */
  async discover(): Promise<DriverDevice[]> {
    const { devices, unobserved } = await this.discoverPartial();
    const first = unobserved[0];
    if (first) throw first.error;
    return devices;
  }

  /**
   * What sysfs and nvidia-smi show now, GPU by GPU. nvidia-smi failing (a driver upgraded without
   * a reboot: "Failed to initialize NVML: Driver/library version mismatch", a hang, an exit
   * status, truncated XML) costs only what needs it: each GPU is still reported from sysfs as a
   * pGPU or vGPU, and one that is, or may be, in MIG mode is named as not observed (its last
   * observed record stands). A vGPU type its GPU does not offer fails that GPU alone.
   */
  async discoverPartial(): Promise<PartialDiscovery & { unobserved: (UnobservedDevice & { error: unknown })[] }> {
    const fns = await readPciFunctions(this.opts.sysfsRoot);
    const byAddr = new Map(fns.map((f) => [f.address, f]));
    const gpus = fns.filter((f) => f.vendorId === '10de' && GPU_CLASSES.some((c) => f.classCode.startsWith(c)) && !f.bootVga);
    let mig: MigState;
    let smiError: unknown;
    try {
      mig = await this.migState(gpus);
      this.plainGpus = new Set(gpus.map((g) => g.address).filter((a) => !mig.gpus.has(a)));
    } catch (err) {
      smiError = err;
      mig = { gpus: new Map(), instances: [], names: new Map(), products: new Map(), uuids: new Map() };
    }
    const devices: DriverDevice[] = [];
    const unobserved: (UnobservedDevice & { error: unknown })[] = [];
    const found: { address: string; device: DriverDevice }[] = [];
    const migCards = new Set<string>();
    // VFs configured for a type one by one: cut to the type's max_instance per GPU below.
    const perVf = new Map<string, { index: number; vf: PciFunction; type: string }[]>();
    for (const fn of gpus) {
      if (fn.physfn !== null && (this.opts.filterSriovVfs || this.typeOf.has(fn.physfn) || mig.gpus.has(fn.physfn))) continue;
      // A GPU whose VFs are configured as vGPUs one by one is theirs: passed through whole, it would take them all.
      if (fn.physfn === null && fn.virtfns.some((v) => this.typeOf.has(v))) continue;
      const vfs = fn.virtfns.map((a) => byAddr.get(a)).filter((v): v is PciFunction => v !== undefined);
      const smiGpu = mig.gpus.get(fn.address);
      const deviceOf = (deployables: DeployableT[]): DriverDevice =>
        cyborgDevice({
          host: this.opts.host,
          address: fn.address,
          type: 'GPU',
          vendor: fn.vendorId,
          model: mig.products.get(fn.address) || this.modelOf(fn),
          stdBoardInfo: { product_id: fn.productId, controller: fn.classCode.startsWith('0300') ? 'VGA compatible controller' : '3D controller' },
          vendorBoardInfo: '{"vendor_info": "gpu_vb_info"}',
          driver: this.name,
          deployables,
          ...identityOf(mig.uuids.get(fn.address)),
        });
      let deployables: DeployableT[];
      try {
        deployables = smiGpu ? this.migDeployables(fn, vfs, smiGpu, mig.instances, mig.names) : [await this.gpuDeployable(fn, vfs)];
      } catch (err) {
        // This GPU's own fault (a vGPU type it does not offer): its siblings are reported as usual.
        unobserved.push({ deviceUuid: deviceOf([]).uuid, reason: reasonOf(err), error: err });
        continue;
      }
      const device = deviceOf(deployables);
      // Without nvidia-smi, sysfs cannot tell a MIG GPU: one not known to be out of MIG mode keeps its last record.
      if (smiError !== undefined && !this.typeOf.has(fn.address) && !this.plainGpus.has(fn.address)) {
        unobserved.push({ deviceUuid: device.uuid, reason: reasonOf(smiError), partial: device, error: smiError });
        continue;
      }
      const vfType = fn.physfn !== null ? this.typeOf.get(fn.address) : undefined;
      if (vfType !== undefined)
        perVf.set(`${fn.physfn}|${vfType}`, [...(perVf.get(`${fn.physfn}|${vfType}`) ?? []), { index: devices.length, vf: fn, type: vfType }]);
      devices.push(device);
      found.push({ address: fn.address, device });
      if (smiGpu) migCards.add(device.uuid);
    }
    if (smiError === undefined) this.migCards = migCards;
    for (const group of perVf.values()) {
      const capped = capVfVgpus(group.map((g) => ({ vf: g.vf, type: g.type, deployable: devices[g.index]!.deployables[0]! })));
      group.forEach((g, i) => (devices[g.index] = { ...devices[g.index]!, deployables: [capped[i]!] }));
    }
    // Without nvidia-smi's UUID a GPU is named by its PCIe serial, where it has one.
    const named = await withIdentity(this.opts.sysfsRoot, devices);
    const identified = named.map((device, i) => ({ address: found[i]!.address, device }));
    this.xid.discovered([...identified, ...unobserved.filter((u) => u.partial).map((u) => ({ address: addressOf(u.partial!), device: u.partial! }))]);
    return { devices: named, unobserved };
  }

  /** The device model without nvidia-smi: the name pci.ids gives its id ([gpu_devices] pci_ids), else Cyborg's placeholder. */
  private modelOf(fn: PciFunction): string {
    return this.opts.modelNames?.get(fn.productId.toLowerCase()) ?? 'miss model info';
  }

  private async gpuDeployable(fn: PciFunction, vfs: PciFunction[]): Promise<DeployableT> {
    const { host } = this.opts;
    const name = `${host}_${fn.address}`;
    const type = this.typeOf.get(fn.address);
    if (!type) {
      const legacy = this.opts.legacyTraits ? legacyPgpuTraits(fn.productId) : [];
      return cyborgDeployable({
        host,
        name,
        driverName: NVIDIA_DRIVER_NAME,
        rc: 'PGPU',
        traits: ['OWNER_CYBORG', pgpuTrait(fn.productId), ...legacy],
        handles: [pciHandle(host, name, fn.address)],
      });
    }
    const offer = await vgpuOffer(this.opts.sysfsRoot, host, name, fn, vfs, type);
    return cyborgDeployable({
      host,
      name,
      driverName: NVIDIA_DRIVER_NAME,
      rc: 'VGPU',
      traits: ['OWNER_CYBORG', `${pgpuTrait(fn.productId)}_${offer.typeName}`],
      handles: offer.handles,
    });
  }

  /**
   * One deployable per MIG profile among the GPU's instances; its handles name the instances.
   * Profile ids are per GPU model (id 9 is a 3g.40gb on an H100, a 3g.20gb on an A100 40GB):
   * each instance's name is looked up among its own GPU's profiles.
   */
  private migDeployables(fn: PciFunction, vfs: PciFunction[], gpu: SmiGpu, instances: GpuInstance[], names: Map<string, string>): DeployableT[] {
    const { host } = this.opts;
    const mine = instances.filter((i) => i.gpu === gpu.index);
    const nameOf = (i: GpuInstance): string => names.get(`${i.gpu}:${i.profileId}`) ?? i.name;
    const profiles = [...new Set(mine.map(nameOf))].sort();
    return profiles.map((profile) => {
      const name = `${host}_${fn.address}_MIG_${profile}`;
      const handles = mine
        .filter((i) => nameOf(i) === profile)
        .map((i) =>
          handleOf(host, name, 'MDEV', mdevJson(fn.address, `MIG-${profile}`, `MIG-${profile}_${i.instanceId}`, { gpu_instance_id: String(i.instanceId) })),
        );
      return cyborgDeployable({
        host,
        name,
        driverName: NVIDIA_DRIVER_NAME,
        rc: migResourceClass(profile),
        traits: ['OWNER_CYBORG', migTrait(fn.productId, profile)],
        handles: this.servable(handles, foreignMigVgpus(vfs, profile, new Set(handles.map((h) => h.uuid)))),
      });
    });
  }

  /**
   * The handles of a MIG profile less those GPU instances mdevs it did not make hold (a VM's
   * MIG-backed vGPU is placed by the vGPU manager on any free instance of its profile, so the
   * handles count instances): never offered, since the bind would find none free. Handles bound
   * now stay; the last of the others go.
   */
  private servable(handles: DeployableT['attachHandles'], foreign: number): DeployableT['attachHandles'] {
    if (foreign === 0) return handles;
    const out = [...handles];
    for (let i = out.length - 1; i >= 0 && foreign > 0; i--) {
      if (this.bound.has(out[i]!.uuid)) continue;
      out.splice(i, 1);
      foreign--;
    }
    return out;
  }

  private async migState(gpus: PciFunction[]): Promise<MigState> {
    const none: MigState = { gpus: new Map(), instances: [], names: new Map(), products: new Map(), uuids: new Map() };
    if (!this.smi.enabled || gpus.length === 0) return none;
    const all = await this.smi.query();
    const products = new Map(all.filter((g) => g.productName && g.productName !== 'N/A').map((g) => [g.address, g.productName]));
    const uuids = new Map(all.filter((g) => /^GPU-[0-9a-f-]+$/i.test(g.uuid)).map((g) => [g.address, g.uuid]));
    const enabled = all.filter((g) => g.migCurrent === 'Enabled');
    if (enabled.length === 0) return { ...none, products, uuids };
    const [profiles, instances] = await Promise.all([this.smi.profiles(), this.smi.instances()]);
    return { gpus: new Map(enabled.map((g) => [g.address, g])), instances, names: new Map(profiles.map((p) => [`${p.gpu}:${p.id}`, p.name])), products, uuids };
  }

  async prepareAttach(req: OpRequest): Promise<OpResult> {
    const handle = handleIn(req.deployable, req.params.handleUuid);
    await this.make(req.deployable, handle);
    this.bound.set(handle.uuid, req.deployable);
    return { handleUuid: handle.uuid, attachType: handle.attachType, attachInfo: handle.attachInfo };
  }

  async releaseAttach(req: OpRequest): Promise<OpResult> {
    const handle = handleIn(req.deployable, req.params.handleUuid);
    const info = JSON.parse(handle.attachInfo) as Record<string, string>;
    const address = `${info.domain}:${info.bus}:${info.device}.${info.function}`;
    if (handle.attachType === 'MDEV' && !this.hostMig(info)) await removeMdev(this.opts.sysfsRoot, address, handle.uuid);
    else if (handle.attachType === 'PCI' && this.vfType(req.deployable) !== undefined) await setVfVgpuType(this.opts.sysfsRoot, address, 0);
    this.bound.delete(handle.uuid);
    return { handleUuid: handle.uuid };
  }

  /** Makes what a bound handle needs on the host; true when something had to be made. */
  private async make(dep: DeployableT, handle: DeployableT['attachHandles'][number]): Promise<boolean> {
    const info = JSON.parse(handle.attachInfo) as Record<string, string>;
    const address = `${info.domain}:${info.bus}:${info.device}.${info.function}`;
    if (handle.attachType === 'MDEV' && info.gpu_instance_id !== undefined) return this.hostMig(info) ? false : this.makeMigVgpu(address, info, handle.uuid);
    if (handle.attachType === 'MDEV' && info.asked_type) return createMdev(this.opts.sysfsRoot, address, info.asked_type, handle.uuid);
    const vfType = this.vfType(dep);
    if (handle.attachType === 'PCI' && vfType !== undefined) return setVfVgpuType(this.opts.sysfsRoot, address, vfType);
    return false;
  }

  /** A MIG handle handed out as its GPU instance (`[gpu_devices] mig_host_attach`): nothing is made for it. */
  private hostMig(info: Record<string, string>): boolean {
    return info.gpu_instance_id !== undefined && this.opts.migHostAttach === true;
  }

  /**
   * A VM's MIG slice: the MIG-backed vGPU of the handle's profile, made on a free VF of its GPU
   * with the handle's uuid (./mig-vgpu.ts). The vGPU manager places it on a free GPU instance of
   * that profile, so the handle counts instances rather than naming one.
   */
  private async makeMigVgpu(pf: string, info: Record<string, string>, uuid: string): Promise<boolean> {
    if (await mdevExists(this.opts.sysfsRoot, pf, uuid)) return false;
    const profile = (info.asked_type ?? '').replace(/^MIG-/, '');
    const parent = await migVgpuParent(this.opts.sysfsRoot, pf, profile, info.gpu_instance_id ?? '');
    return createMdev(this.opts.sysfsRoot, parent.vf, parent.type, uuid);
  }

  /** The numeric vGPU type of a deployable whose handles are VFs (vGPU 17+ layout). */
  private vfType(dep: DeployableT): number | undefined {
    const type = this.typeOf.get(dep.name.slice(this.opts.host.length + 1));
    return type === undefined ? undefined : typeNumber(type);
  }

  async restoreBound(bound: readonly BoundHandle[]): Promise<{ restored: string[]; present: string[] }> {
    const restored: string[] = [];
    const present: string[] = [];
    for (const b of bound) {
      const handle = handleIn(b.deployable, b.handleUuid);
      ((await this.make(b.deployable, handle)) ? restored : present).push(handle.uuid);
      this.bound.set(handle.uuid, b.deployable);
    }
    return { restored, present };
  }

  /**
   * What exists now of the host side of its devices' handles — an mdev made for a vGPU handle, a
   * VF carrying its vGPU type — and each MIG card's layout (a profile per GPU instance). Changes
   * nothing: the conductor compares it with the handles instances hold.
   */
  async observe(devices: readonly DriverDevice[]): Promise<Observation> {
    const out: Observation = { deployables: [], present: [], cards: [] };
    for (const d of devices) {
      const layout: string[] = [];
      for (const dep of d.deployables) {
        out.deployables.push(dep.uuid);
        const profile = /_MIG_(.+)$/.exec(dep.name)?.[1];
        if (profile) layout.push(...dep.attachHandles.map(() => profile));
        for (const h of dep.attachHandles) if (await this.madeNow(dep, h)) out.present.push(h.uuid);
      }
      // A reboot that lost every GPU instance leaves a MIG card with no deployables: its empty
      // layout is what tells the conductor to apply the recorded one again.
      if (layout.length > 0 || this.migCards.has(d.uuid)) out.cards.push({ deviceUuid: d.uuid, migLayout: layout.sort() });
    }
    return out;
  }

  /** Whether what a handle needs on the host exists now; a passthrough GPU or a GPU instance handed to the host needs nothing made. */
  private async madeNow(dep: DeployableT, handle: DeployableT['attachHandles'][number]): Promise<boolean> {
    const info = JSON.parse(handle.attachInfo) as Record<string, string>;
    const address = `${info.domain}:${info.bus}:${info.device}.${info.function}`;
    if (handle.attachType === 'MDEV' && info.asked_type && !this.hostMig(info)) return mdevExists(this.opts.sysfsRoot, address, handle.uuid);
    const vfType = this.vfType(dep);
    if (handle.attachType === 'PCI' && vfType !== undefined) return (await vfVgpuType(this.opts.sysfsRoot, address)) === vfType;
    return true;
  }

  /** Whether an mdev of a bound handle exists now (operators' checks, tests). */
  mdevExists(parent: string, uuid: string): Promise<boolean> {
    return mdevExists(this.opts.sysfsRoot, parent, uuid);
  }

  /** Health from the XID events seen (a GPU with a fatal one is unhealthy until reset); healthy when none are watched. */
  health(): Promise<Health[]> {
    return Promise.resolve(this.xid.health());
  }

  /** Follows the kernel log for XID events (`[gpu_devices] xid_command`), each reported at once. */
  watchHealth(onSignals: (signals: Health[]) => void, log: Logger): HealthWatch | undefined {
    return this.xid.watch(onSignals, log.child({ driver: this.name }));
  }

  /**
   * Resets the GPU (`nvidia-smi --gpu-reset -i <address>` where nvidia-smi is configured) and
   * forgets its fatal XID. The conductor never asks while an instance holds the device.
   */
  async reset(req: OpRequest): Promise<OpResult> {
    const address = /[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]/i.exec(req.deployable.name.slice(this.opts.host.length + 1))?.[0];
    if (!address)
      throw new DriverError('driver.failed', `deployable ${req.deployable.name} names no GPU address`, {
        reason: 'not_found',
        deployable: req.deployable.name,
      });
    // A reset takes the whole GPU: none of its deployables (its other MIG profiles) may be in use.
    const inUse = [...this.bound.entries()].filter(([, d]) => d.name.slice(this.opts.host.length + 1).startsWith(address));
    if (inUse.length > 0) {
      throw new DriverError('driver.in_use', `GPU ${address} has ${inUse.length} handle(s) attached: detach them before resetting it`, {
        address,
        handles: inUse.map(([u]) => u),
      });
    }
    const output = this.smi.enabled ? await this.smi.reset(address) : undefined;
    this.xid.cleared(req.deployable.uuid);
    return { address, ...(output === undefined ? {} : { output: output.trim() }) };
  }

  async applyMigLayout(address: string, profiles: readonly string[]): Promise<OpResult> {
    const attached = [...this.bound.entries()].filter(([, d]) => d.name.startsWith(`${this.opts.host}_${address}_MIG_`));
    if (attached.length > 0) {
      throw new DriverError('driver.in_use', `GPU ${address} has ${attached.length} MIG instance(s) attached: detach them before changing its layout`, {
        address,
        handles: attached.map(([u]) => u),
      });
    }
    const gpu = await this.migGpu(address);
    const chosen = resolveLayout(
      address,
      profiles,
      (await this.smi.profiles()).filter((p) => p.gpu === gpu.index),
    );
    const ids = chosen.map((p) => p.id);
    const previous = currentIds(gpu.index, await this.smi.instances());
    const output = await replaceLayout(this.smi, gpu, ids, previous);
    await this.layouts.update((cur) => ({ ...cur, [address]: chosen.map((p) => p.name) }));
    return { address, layout: chosen.map((p) => p.name), output };
  }

  async reapplyMigLayouts(): Promise<OpResult[]> {
    const remembered = await this.layouts.read();
    const out: OpResult[] = [];
    for (const [address, layout] of Object.entries(remembered)) {
      if (!layout) continue;
      const gpu = await this.migGpu(address);
      const profiles = (await this.smi.profiles()).filter((p) => p.gpu === gpu.index);
      const want = resolveLayout(address, layout, profiles)
        .map((p) => p.id)
        .sort((a, b) => a - b);
      const have = currentIds(gpu.index, await this.smi.instances());
      if (want.join() === have.join()) {
        out.push({ address, layout, applied: false });
        continue;
      }
      out.push({ ...(await this.applyMigLayout(address, layout)), applied: true });
    }
    return out;
  }

  private async migGpu(address: string): Promise<SmiGpu> {
    if (!this.smi.enabled) throw new DriverError('driver.failed', 'MIG needs nvidia-smi: none is configured', { reason: 'binary_missing' });
    const gpu = (await this.smi.query()).find((g) => g.address === address);
    if (!gpu) throw new DriverError('driver.failed', `nvidia-smi lists no GPU ${address}`, { reason: 'not_found', address });
    if (gpu.migCurrent !== 'Enabled')
      throw new DriverError('driver.failed', `GPU ${address} is not in MIG mode (current ${gpu.migCurrent}, pending ${gpu.migPending})`, {
        reason: 'mig_disabled',
        address,
      });
    return gpu;
  }
}

/** nvidia-smi's GPU UUID as the device's identity; nothing where nvidia-smi gave none (not configured, failing). */
function identityOf(uuid: string | undefined): { identity?: { serial: string; source: string } } {
  return uuid ? { identity: { serial: uuid, source: 'nvidia-smi uuid' } } : {};
}

/** A failure in the tool's own words (the DriverError's message names the command and what it said). */
function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The PCI address of a device, from its control path. */
function addressOf(d: DriverDevice): string {
  const i = JSON.parse(d.controlPath.info) as Record<string, string>;
  return `${i.domain}:${i.bus}:${i.device}.${i.function}`;
}

function handleIn(dep: DeployableT, uuid: unknown): DeployableT['attachHandles'][number] {
  const handle = dep.attachHandles.find((h) => h.uuid === uuid);
  if (!handle)
    throw new DriverError('driver.failed', `deployable ${dep.name} has no attach handle ${String(uuid ?? '(none given)')}`, {
      reason: 'handle_unknown',
      deployable: dep.name,
    });
  return handle;
}
