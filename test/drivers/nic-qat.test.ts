import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { IntelNicDriver } from '../../drivers/nic/index.js';
import { IntelQatDriver } from '../../drivers/qat/index.js';
import { buildHost, NIC_HOST } from '../fixtures/vendors/hosts.js';
import { SysfsKernel } from '../support/sysfs-kernel.js';
import type { DeployableT } from '../../model/index.js';

const attrs = (d: DeployableT): Record<string, string> => Object.fromEntries(d.attributes.map((a) => [a.key, a.value]));

describe('intel_nic_driver on an X710 with VFs', () => {
  let root: string;
  beforeAll(() => {
    root = buildHost(NIC_HOST, 'nic');
  });

  it('splits PF and VFs as Cyborg does and carries physical_network in the attach info', async () => {
    const driver = new IntelNicDriver({
      host: 'compute1',
      sysfsRoot: root,
      physicalDeviceMappings: ['physnet1:ens1f0', 'physnet2:ens1f1'],
      functionDeviceMappings: ['GTPV1:ens1f0'],
    });
    const devices = await driver.discover();
    expect(devices.map((d) => [d.vendor, d.stdBoardInfo, d.deployables.length])).toEqual([
      ['0x8086', '{"product_id": "0x1572"}', 4],
      ['0x8086', '{"product_id": "0x1572"}', 1],
    ]);
    const vf = devices[0]!.deployables[1]!;
    expect(vf.name).toBe('compute1_0000:3b:02.1');
    expect(vf.driverName).toBe('intel');
    expect(attrs(vf)).toEqual({ rc: 'CUSTOM_NIC', trait0: 'CUSTOM_VF', trait1: 'CUSTOM_GTPV1', trait2: 'CUSTOM_PHYSNET1' });
    expect(vf.attachHandles[0]!.attachInfo).toBe('{"bus": "3b", "device": "02", "domain": "0000", "function": "1", "physical_network": "physnet1"}');
    const pf = devices[1]!.deployables[0]!;
    expect(attrs(pf)).toEqual({ rc: 'CUSTOM_NIC', trait0: 'CUSTOM_PF', trait1: 'CUSTOM_PHYSNET2' });
  });

  it('changes the VF count only while no VF is attached, and re-applies it after a reboot', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'cyborg-nic-state-'));
    const driver = new IntelNicDriver({ host: 'compute1', sysfsRoot: root, stateDir });
    const vf = (await driver.discover())[0]!.deployables[0]!;
    await driver.prepareAttach({ key: 'a', deployable: vf, params: { handleUuid: vf.attachHandles[0]!.uuid } });
    await expect(driver.setVfCount('0000:3b:00.0', 8)).rejects.toMatchObject({ code: 'driver.in_use' });
    await driver.releaseAttach({ key: 'b', deployable: vf, params: { handleUuid: vf.attachHandles[0]!.uuid } });
    await expect(driver.setVfCount('0000:3b:00.0', 65)).rejects.toMatchObject({ details: { reason: 'vf_count_invalid' } });
    await driver.setVfCount('0000:3b:00.0', 8);
    const numvfs = join(root, 'bus/pci/devices/0000:3b:00.0/sriov_numvfs');
    expect(readFileSync(numvfs, 'utf8')).toBe('8');
    await driver.setVfCount('0000:3b:00.0', 8);
    const rebooted = new IntelNicDriver({ host: 'compute1', sysfsRoot: root, stateDir });
    expect(await rebooted.reapplyVfCounts()).toEqual([{ address: '0000:3b:00.0', numvfs: 8 }]);
  });
});

describe('what the NIC and QAT drivers observe after a reboot', () => {
  it("reports each PF's VF count from sriov_numvfs, every VF it found present, and 0 once a reboot lost them", async () => {
    const root = join(mkdtempSync(join(tmpdir(), 'cyborg-nic-observe-')), 'sys');
    const kernel = new SysfsKernel(root, NIC_HOST);
    const nic = new IntelNicDriver({ host: 'compute1', sysfsRoot: root });
    const before = await nic.discover();
    const seen = await nic.observe(before);
    expect(seen.cards).toEqual([
      { deviceUuid: before[0]!.uuid, vfCount: 4 },
      { deviceUuid: before[1]!.uuid, vfCount: 0 },
    ]);
    expect(seen.present).toEqual(before.flatMap((d) => d.deployables.flatMap((x) => x.attachHandles.map((h) => h.uuid))));
    expect(seen.deployables).toHaveLength(5);

    kernel.reboot(['0000:3b:00.0']);
    const after = await nic.discover();
    expect(after[0]!.uuid).toBe(before[0]!.uuid);
    expect(after[0]!.deployables.map((d) => d.name)).toEqual(['compute1_0000:3b:00.0']);
    expect((await nic.observe(after)).cards[0]).toEqual({ deviceUuid: before[0]!.uuid, vfCount: 0 });

    const qat = new IntelQatDriver({ host: 'compute1', sysfsRoot: root });
    const cards = await qat.discover();
    expect((await qat.observe(cards)).cards).toEqual([{ deviceUuid: cards[0]!.uuid, vfCount: 2 }]);
  });
});

describe('intel_qat_driver on a C62x', () => {
  it('reports one CUSTOM_QAT deployable per VF and no traits, as Cyborg', async () => {
    const root = buildHost(NIC_HOST, 'qat');
    const devices = await new IntelQatDriver({ host: 'compute1', sysfsRoot: root }).discover();
    expect(devices).toHaveLength(1);
    expect(devices[0]!.type).toBe('QAT');
    expect(devices[0]!.deployables.map((d) => [d.name, d.attributes, d.attachHandles[0]!.attachInfo])).toEqual([
      ['compute1_0000:3d:01.0', [{ key: 'rc', value: 'CUSTOM_QAT' }], '{"bus": "3d", "device": "01", "domain": "0000", "function": "0"}'],
      ['compute1_0000:3d:01.1', [{ key: 'rc', value: 'CUSTOM_QAT' }], '{"bus": "3d", "device": "01", "domain": "0000", "function": "1"}'],
    ]);
  });
});
