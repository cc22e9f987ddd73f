import { beforeAll, describe, expect, it } from 'vitest';
import { PciDriver } from '../../drivers/pci/index.js';
import { buildHost, NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { cyborgTree, facts, runCyborg, skipReason, TAG } from './harness.js';

/**
 * Differential conformance of `pci_driver` with OpenStack Cyborg's own `pci/pci/sysinfo.py`
 * (14.0.0 and later) and its whitelist, on the same sysfs tree and lspci output (./harness.ts).
 */
describe.skipIf(skipReason !== undefined)(`conformance with OpenStack Cyborg ${TAG}'s pci_driver`, () => {
  let tree: string;
  beforeAll(() => {
    tree = cyborgTree([
      'cyborg/accelerator/drivers/pci/pci/sysinfo.py',
      'cyborg/accelerator/drivers/pci/utils.py',
      'cyborg/accelerator/drivers/pci/whitelist.py',
      'cyborg/accelerator/drivers/pci/devspec.py',
    ]);
  });

  it.each([
    ['the H100s by vendor and product', '{"vendor_id": "10de", "product_id": "2331"}'],
    ['one GPU by address', '{"address": "0000:b1:00.0"}'],
  ])('%s: the same devices, class, traits and handles', async (_what, spec) => {
    const root = buildHost(NVIDIA_HOST, 'conformance-pci');
    const theirs = await runCyborg(tree, root, { pci: { passthrough_whitelist: [spec] } }, 'cyborg.accelerator.drivers.pci.pci.sysinfo', 'discover');
    if (!theirs.ok) throw new Error(`Cyborg's driver failed: ${theirs.error}`);
    const ours = await new PciDriver({ host: 'compute1', sysfsRoot: root, allowList: spec }).discover();
    expect(facts(ours).length).toBeGreaterThan(0);
    // Released pci_drivers (14.0.0 to 16.0.1) give no OWNER_CYBORG attribute; Cyborg's master adds
    // it, as ours does: Placement gets it on every provider either way (docs/drivers.md).
    const theirsOwned = theirs.devices.some((d) => d.deployables.some((dep) => dep.attributes.some((a) => a.value === 'OWNER_CYBORG')));
    const mine = theirsOwned
      ? ours
      : ours.map((d) => ({
          ...d,
          deployables: d.deployables.map((dep) => ({ ...dep, attributes: dep.attributes.filter((a) => a.value !== 'OWNER_CYBORG') })),
        }));
    expect(facts(mine)).toEqual(facts(theirs.devices));
  });
});

// Said only where the suite cannot run, so the run's list of skips names the reason.
if (skipReason !== undefined) {
  describe("conformance with OpenStack Cyborg's pci_driver", () => {
    it.skip(`skipped: ${skipReason}`, () => undefined);
  });
}
