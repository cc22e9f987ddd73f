import { beforeAll, describe, expect, it } from 'vitest';
import { IntelNicDriver } from '../../drivers/nic/index.js';
import { IntelQatDriver } from '../../drivers/qat/index.js';
import { buildHost, NIC_HOST } from '../fixtures/vendors/hosts.js';
import { cyborgTree, facts, runCyborg, skipReason, TAG } from './harness.js';

/**
 * Differential conformance of the Intel NIC (X710 with VFs, a physnet and a function mapped onto
 * its port) and QAT (C62x with VFs) drivers with OpenStack Cyborg's own `nic/intel/sysinfo.py`
 * and `qat/intel/sysinfo.py`, on the same sysfs tree (see ./harness.ts for where Cyborg's code
 * comes from). Cyborg reads its NIC mappings from `[x710_static]` whatever
 * `enabled_nic_types` says: the case names that section.
 */
describe.skipIf(skipReason !== undefined)(`conformance with OpenStack Cyborg ${TAG}'s intel_nic_driver and intel_qat_driver`, () => {
  let tree: string;
  let root: string;
  beforeAll(() => {
    tree = cyborgTree(['cyborg/accelerator/drivers/nic/intel/sysinfo.py', 'cyborg/accelerator/drivers/qat/intel/sysinfo.py']);
    root = buildHost(NIC_HOST, 'conformance-nic');
  });

  it('X710: every PF and VF the same, physnet and function traits included', async () => {
    const mappings = { physical_device_mappings: ['physnet1:ens1f0'], function_device_mappings: ['GTPV1:ens1f0'] };
    const theirs = await runCyborg(tree, root, { x710_static: mappings }, 'cyborg.accelerator.drivers.nic.intel.sysinfo', 'nic_tree');
    if (!theirs.ok) throw new Error(`Cyborg's driver failed: ${theirs.error}`);
    const ours = await new IntelNicDriver({
      host: 'compute1',
      sysfsRoot: root,
      physicalDeviceMappings: mappings.physical_device_mappings,
      functionDeviceMappings: mappings.function_device_mappings,
    }).discover();
    expect(facts(ours).length).toBeGreaterThan(0);
    expect(facts(ours)).toEqual(facts(theirs.devices));
  });

  it('QAT C62x: every VF the same', async () => {
    const theirs = await runCyborg(tree, root, {}, 'cyborg.accelerator.drivers.qat.intel.sysinfo', 'qat_tree');
    if (!theirs.ok) throw new Error(`Cyborg's driver failed: ${theirs.error}`);
    const ours = await new IntelQatDriver({ host: 'compute1', sysfsRoot: root }).discover();
    expect(facts(ours).length).toBeGreaterThan(0);
    expect(facts(ours)).toEqual(facts(theirs.devices));
  });
});

// Said only where the suite cannot run, so the run's list of skips names the reason.
if (skipReason !== undefined) {
  describe("conformance with OpenStack Cyborg's NIC and QAT drivers", () => {
    it.skip(`skipped: ${skipReason}`, () => undefined);
  });
}
