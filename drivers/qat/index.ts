import type { AttachPreparer, Driver, DriverDevice, OpRequest, OpResult } from '../driver.js';
import type { BoundHandle, BoundRestorer, HostObserver, Observation, VfCountManager } from '../abilities.js';
import { cyborgDeployable, cyborgDevice, pciHandle } from '../cyborg-report.js';
import { readPciFunctions, withIdentity, type PciFunction } from '../generic/index.js';
import { handleIn, observeVfCounts, pfsWithVfs, VfCounts } from '../nic/index.js';
import type { DeployableT } from '../../model/index.js';

export interface IntelQatDriverOptions {
  host: string;
  sysfsRoot: string;
  /** `vendor:product` of the QAT PFs (Cyborg knows the C62x, 8086:37c8). */
  knownIds?: readonly string[];
  stateDir?: string;
}

/**
 * Cyborg's `intel_qat_driver`: the same PF/VF split as its NIC driver, resource class
 * `CUSTOM_QAT` and, as in Cyborg, no traits (a device profile asks `resources:CUSTOM_QAT=1`).
 */
export class IntelQatDriver implements Driver, AttachPreparer, BoundRestorer, HostObserver, VfCountManager {
  readonly name = 'intel_qat_driver';
  readonly version = '1.0.0';
  private readonly pfOf = new Map<string, string>();
  private readonly counts: VfCounts;

  constructor(private readonly opts: IntelQatDriverOptions) {
    this.counts = new VfCounts(opts.sysfsRoot, opts.stateDir, 'intel-qat-vf-counts.json', (d) => this.pfOf.get(d.name));
  }

  async discover(): Promise<DriverDevice[]> {
    const { host } = this.opts;
    const devices = pfsWithVfs(await readPciFunctions(this.opts.sysfsRoot), this.opts.knownIds ?? ['8086:37c8']).map(({ pf, vfs }) => {
      const dep = (f: PciFunction): DeployableT => {
        const name = `${host}_${f.address}`;
        this.pfOf.set(name, pf.address);
        return cyborgDeployable({ host, name, driverName: 'intel', rc: 'CUSTOM_QAT', traits: [], handles: [pciHandle(host, name, f.address)] });
      };
      return cyborgDevice({
        host,
        address: pf.address,
        type: 'QAT',
        vendor: `0x${pf.vendorId}`,
        model: 'miss_model_info',
        stdBoardInfo: { product_id: `0x${pf.productId}` },
        vendorBoardInfo: 'miss_vb_info',
        driver: this.name,
        deployables: vfs.length > 0 ? vfs.map(dep) : [dep(pf)],
      });
    });
    return withIdentity(this.opts.sysfsRoot, devices);
  }

  async prepareAttach(req: OpRequest): Promise<OpResult> {
    const h = handleIn(req);
    this.counts.attach(h.uuid, req.deployable);
    return { handleUuid: h.uuid, attachType: h.attachType, attachInfo: h.attachInfo };
  }

  async releaseAttach(req: OpRequest): Promise<OpResult> {
    this.counts.detach(handleIn(req).uuid);
    return { handleUuid: req.params.handleUuid };
  }

  async restoreBound(bound: readonly BoundHandle[]): Promise<{ restored: string[]; present: string[] }> {
    return { restored: [], present: this.counts.restore(bound) };
  }

  /** Each PF's VF count now: the conductor sets a count a reboot lost again for VFs instances hold. */
  observe(devices: readonly DriverDevice[]): Promise<Observation> {
    return observeVfCounts(this.opts.sysfsRoot, devices);
  }

  setVfCount(address: string, count: number): Promise<OpResult> {
    return this.counts.set(address, count);
  }

  reapplyVfCounts(): Promise<OpResult[]> {
    return this.counts.reapply();
  }
}
