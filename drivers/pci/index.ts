import type { Driver, DriverDevice } from '../driver.js';
import { cyborgDeployable, cyborgDevice, pciHandle } from '../cyborg-report.js';
import { AllowList, readPciFunctions, withIdentity } from '../generic/index.js';

export interface PciDriverOptions {
  host: string;
  sysfsRoot: string;
  /** `[pci] passthrough_whitelist` (Nova's JSON): only what it admits is reported; empty: nothing, as Cyborg. */
  allowList?: string;
}

/** Cyborg's vendor names of `pci/utils.py` VENDOR_MAPS: the others keep their vendor id. */
const VENDOR_NAMES: Readonly<Record<string, string>> = { '10de': 'nvidia', '102b': 'matrox' };

/**
 * Cyborg 2025.1's `pci_driver` (14.0.0 and later; `cyborg/accelerator/drivers/pci/pci/sysinfo.py`):
 * every PCI function `[pci] passthrough_whitelist` admits is one device of type GPU (whatever
 * it is) with one deployable `<host>_<address>`, resource class `CUSTOM_PCI`, traits
 * `OWNER_CYBORG`, `CUSTOM_PCI_<VENDOR>` (for the vendors Cyborg names) and
 * `CUSTOM_PCI_PRODUCT_ID_<PID>`, one `PCI` attach handle. Cyborg lists functions with
 * `lspci -nnn -D`; sysfs gives the same ones. The allow-list here never admits a bridge, the
 * console display or the root disk's controller (docs/drivers.md, deliberate differences).
 */
export class PciDriver implements Driver {
  readonly name = 'pci_driver';
  readonly version = '1.0.0';
  private readonly allow: AllowList | null;

  constructor(private readonly opts: PciDriverOptions) {
    this.allow = AllowList.fromJson(opts.allowList ?? '');
  }

  async discover(): Promise<DriverDevice[]> {
    if (!this.allow) return [];
    const { host } = this.opts;
    const fns = (await readPciFunctions(this.opts.sysfsRoot)).filter((f) => this.allow!.match(f) !== undefined);
    const devices = fns.map((fn) => {
      const vendor = VENDOR_NAMES[fn.vendorId];
      const name = `${host}_${fn.address}`;
      const traits = ['OWNER_CYBORG', ...(vendor ? [`CUSTOM_PCI_${vendor.toUpperCase()}`] : []), `CUSTOM_PCI_PRODUCT_ID_${fn.productId.toUpperCase()}`];
      return cyborgDevice({
        host,
        address: fn.address,
        type: 'GPU',
        vendor: fn.vendorId,
        model: fn.productId,
        stdBoardInfo: { product_id: fn.productId, controller: null },
        vendorBoardInfo: 'miss_vb_info',
        driver: this.name,
        deployables: [
          cyborgDeployable({
            host,
            name,
            driverName: (vendor ?? fn.vendorId).toUpperCase(),
            rc: 'CUSTOM_PCI',
            traits,
            handles: [pciHandle(host, name, fn.address)],
          }),
        ],
      });
    });
    return withIdentity(this.opts.sysfsRoot, devices);
  }
}
