import { describe, expect, it } from 'vitest';
import { IntelFpgaDriver } from '../../drivers/fpga/index.js';
import type { AcceleratorView } from '../../model/index.js';
import { desiredOf } from '../../openstack/placement/desired.js';
import { readGroups, whyNot } from '../../placement-query/index.js';
import { buildHost, FPGA_VENDOR_HOST, NLB0_AFU } from '../fixtures/vendors/hosts.js';

/**
 * A PAC running the NLB0 AFU: discovery reads its id from sysfs (32 hex digits), an operator's
 * profile names it as a GUID with dashes (`accel:function_id`, as Glance properties often do).
 * Reprogrammed with that same function, the card keeps the one trait a profile can require.
 */
describe('one function trait, from discovery and after a reprogram with the same function', () => {
  it('is spelled the same, so a profile requiring it keeps matching', async () => {
    const root = buildHost(FPGA_VENDOR_HOST, 'function-trait');
    const [dev] = await new IntelFpgaDriver({ host: 'h', sysfsRoot: root }).discover();
    const dep = dev!.deployables[0]!;
    const discovered = dep.attributes.filter((a) => a.key.startsWith('trait')).map((a) => a.value);
    const trait = 'CUSTOM_FPGA_FUNCTION_ID_INTEL_D8424DC4A4A3C413F89E433683F9040B';
    expect(discovered).toContain(trait);
    const guid = `${NLB0_AFU.slice(0, 8)}-${NLB0_AFU.slice(8, 12)}-${NLB0_AFU.slice(12, 16)}-${NLB0_AFU.slice(16, 20)}-${NLB0_AFU.slice(20)}`;
    const view = {
      id: dep.uuid,
      name: dep.name,
      host: 'h',
      rpUuid: 'rp',
      driver: dep.driverName,
      resourceClass: 'FPGA',
      traits: discovered,
      capacity: 1,
      tags: ['usable'],
      missing: false,
      allocations: [],
      program: { functionId: guid },
    } as unknown as AcceleratorView;
    const d = desiredOf(view);
    expect(d.ok && d.desired.traits.filter((t) => t.startsWith('CUSTOM_FPGA_FUNCTION_ID'))).toEqual([trait]);
    const [group] = readGroups([{ 'resources:FPGA': '1', [`trait:${trait}`]: 'required' }]);
    expect(whyNot(group!, { id: dep.name, free: new Map([['FPGA', 1]]), traits: d.ok ? d.desired.traits : [] })).toBeNull();
  });
});
