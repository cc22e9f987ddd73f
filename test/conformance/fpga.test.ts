import { beforeAll, describe, expect, it } from 'vitest';
import { IntelFpgaDriver, XilinxFpgaDriver } from '../../drivers/fpga/index.js';
import { buildHost, FPGA_VENDOR_HOST } from '../fixtures/vendors/hosts.js';
import { cyborgTree, facts, runCyborg, skipReason, TAG } from './harness.js';

/**
 * Differential conformance of the Intel FPGA driver (a PAC Arria 10 GX with one VF, its OPAE
 * nodes: the FME's PR interface id, the ports' AFU ids) with OpenStack Cyborg's own
 * `fpga/intel/sysinfo.py` on the same sysfs tree (./harness.ts).
 */
describe.skipIf(skipReason !== undefined)(`conformance with OpenStack Cyborg ${TAG}'s intel_fpga_driver and xilinx_fpga_driver`, () => {
  let tree: string;
  beforeAll(() => {
    tree = cyborgTree(['cyborg/accelerator/drivers/fpga/intel/sysinfo.py', 'cyborg/accelerator/drivers/fpga/xilinx/sysinfo.py']);
  });

  it('PAC Arria 10 with a VF: every deployable the same, function and region traits included', async () => {
    const root = buildHost(FPGA_VENDOR_HOST, 'conformance-fpga');
    const theirs = await runCyborg(tree, root, {}, 'cyborg.accelerator.drivers.fpga.intel.sysinfo', 'fpga_tree');
    if (!theirs.ok) throw new Error(`Cyborg's driver failed: ${theirs.error}`);
    const ours = await new IntelFpgaDriver({ host: 'compute1', sysfsRoot: root }).discover();
    expect(facts(ours).length).toBeGreaterThan(0);
    expect(facts(ours)).toEqual(facts(theirs.devices));
  });

  it('Xilinx U250 (management and user PF, one card): the same deployable, class, traits and both handles', async () => {
    const root = buildHost(FPGA_VENDOR_HOST, 'conformance-xilinx');
    const theirs = await runCyborg(tree, root, {}, 'cyborg.accelerator.drivers.fpga.xilinx.sysinfo', 'fpga_tree');
    if (!theirs.ok) throw new Error(`Cyborg's driver failed: ${theirs.error}`);
    const ours = await new XilinxFpgaDriver({ host: 'compute1', sysfsRoot: root }).discover();
    expect(facts(ours).length).toBeGreaterThan(0);
    expect(facts(ours)).toEqual(facts(theirs.devices));
  });
});

// Said only where the suite cannot run, so the run's list of skips names the reason.
if (skipReason !== undefined) {
  describe("conformance with OpenStack Cyborg's Intel FPGA driver", () => {
    it.skip(`skipped: ${skipReason}`, () => undefined);
  });
}
