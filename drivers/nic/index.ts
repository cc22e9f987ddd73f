import type { AttachPreparer, Driver, DriverDevice, OpRequest, OpResult } from '../driver.js';
import type { BoundHandle, BoundRestorer, HostObserver, Observation, VfCountManager } from '../abilities.js';
import { cyborgDeployable, cyborgDevice, customName, parseMappings, pciHandle } from '../cyborg-report.js';
import { DriverError } from '../../errors/index.js';
import { macOf, readPciFunctions, withIdentity, type PciFunction } from '../generic/index.js';
import { observeVfCounts, pfsWithVfs, VfCounts } from './pf-vf.js';
import type { DeployableT } from '../../model/index.js';

export { observeVfCounts, pfsWithVfs, VfCounts, type PfWithVfs } from './pf-vf.js';

export interface IntelNicDriverOptions {
  host: string;
  sysfsRoot: string;
  /** `vendor:product` of the PFs this driver reports (Cyborg's X710 / XXV710 list by default). */
  knownIds?: readonly string[];
  /** `[<nic type>] physical_device_mappings`: `physnet:ifname|ifname`, by the PF's interface name. */
  physicalDeviceMappings?: readonly string[];
  /** `[<nic type>] function_device_mappings`: `FUNCTION:ifname|ifname` (e.g. `GTPV1:ens1f0`). */
  functionDeviceMappings?: readonly string[];
  /** Where chosen VF counts are remembered for re-application after a reboot. */
  stateDir?: string;
}

export const X710_IDS = ['8086:158b', '8086:1572'];

/**
 * Cyborg's `intel_nic_driver`: each known PF is one device; a PF without VFs is one deployable,
 * a PF with VFs one deployable per VF. RC `CUSTOM_NIC`; traits `CUSTOM_PF` / `CUSTOM_VF`,
 * `CUSTOM_<FUNCTION>`, `CUSTOM_<PHYSNET>`; the attach info carries `physical_network` so that
 * Nova's `get_arq_pci_device_profile` finds it.
 */
export class IntelNicDriver implements Driver, AttachPreparer, BoundRestorer, HostObserver, VfCountManager {
  readonly name = 'intel_nic_driver';
  readonly version = '1.0.0';
  private readonly physnets: Map<string, Set<string>>;
  private readonly functions: Map<string, Set<string>>;
  private readonly counts: VfCounts;
  /** Deployable name → its PF, from discovery: a VF count change asks which PF a handle is on. */
  private readonly pfOf = new Map<string, string>();

  constructor(private readonly opts: IntelNicDriverOptions) {
    this.physnets = parseMappings(opts.physicalDeviceMappings ?? []);
    this.functions = parseMappings(opts.functionDeviceMappings ?? []);
    this.counts = new VfCounts(opts.sysfsRoot, opts.stateDir, 'intel-nic-vf-counts.json', (d) => this.pfOf.get(d.name));
  }

  async discover(): Promise<DriverDevice[]> {
    const { host } = this.opts;
    const macs = new Map<string, string | undefined>();
    const devices = pfsWithVfs(await readPciFunctions(this.opts.sysfsRoot), this.opts.knownIds ?? X710_IDS).map(({ pf, vfs }) => {
      const ifname = pf.netdevs.at(-1) ?? '';
      macs.set(pf.address, pf.netdevs[0]);
      const physnet = keyOf(this.physnets, ifname);
      const fn = keyOf(this.functions, ifname);
      const dep = (f: PciFunction, kind: 'PF' | 'VF'): DeployableT => {
        const name = `${host}_${f.address}`;
        const traits = [`CUSTOM_${kind}`, ...(fn ? [customName(fn)] : []), ...(physnet ? [customName(physnet)] : [])];
        const d = cyborgDeployable({ host, name, driverName: 'intel', rc: 'CUSTOM_NIC', traits, handles: [pciHandle(host, name, f.address, physnet)] });
        this.pfOf.set(d.name, pf.address);
        return d;
      };
      return cyborgDevice({
        host,
        address: pf.address,
        type: 'NIC',
        vendor: `0x${pf.vendorId}`,
        model: 'miss_model_info',
        stdBoardInfo: { product_id: `0x${pf.productId}` },
        vendorBoardInfo: 'miss_vb_info',
        driver: this.name,
        deployables: vfs.length > 0 ? vfs.map((v) => dep(v, 'VF')) : [dep(pf, 'PF')],
      });
    });
    // The PF's permanent MAC names the card; its PCIe serial where it has no interface.
    return withIdentity(this.opts.sysfsRoot, devices, async (_d, address) => {
      const mac = await macOf(this.opts.sysfsRoot, address, macs.get(address));
      return mac ? { serial: mac, source: 'mac' } : undefined;
    });
  }

  async prepareAttach(req: OpRequest): Promise<OpResult> {
    const h = handleIn(req);
    this.counts.attach(h.uuid, req.deployable);
    return { handleUuid: h.uuid, attachType: h.attachType, attachInfo: h.attachInfo };
  }

  async releaseAttach(req: OpRequest): Promise<OpResult> {
    const h = handleIn(req);
    this.counts.detach(h.uuid);
    return { handleUuid: h.uuid };
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

function keyOf(mapping: Map<string, Set<string>>, ifname: string): string | undefined {
  if (!ifname) return undefined;
  for (const [k, devs] of mapping) if (devs.has(ifname)) return k;
  return undefined;
}

export function handleIn(req: OpRequest): DeployableT['attachHandles'][number] {
  const h = req.deployable.attachHandles.find((x) => x.uuid === req.params.handleUuid);
  if (!h)
    throw new DriverError('driver.failed', `deployable ${req.deployable.name} has no attach handle ${String(req.params.handleUuid ?? '(none given)')}`, {
      reason: 'handle_unknown',
    });
  return h;
}
