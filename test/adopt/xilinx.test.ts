import { randomBytes, randomUUID } from 'node:crypto';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { XilinxFpgaDriver } from '../../drivers/fpga/index.js';
import { NAMESPACE_DNS, uuid3 } from '../../ids/index.js';
import { PlacementClient } from '../../openstack/placement/client.js';
import { cyborgProcess } from '../cli/spawn.js';
import { buildHost } from '../fixtures/vendors/hosts.js';
import { hostBridge, port } from '../fixtures/sysfs/build.js';
import { placementAuthFor } from '../keystone/placement-auth.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { loadDump, MARIADB, mariadbUp } from './cyborg-db.js';
import { cutOver, targetRows, type CutOver } from './cut-over.js';

const PROJECT = '7acee29c852d4c0ab3764d118be2a3b4';
/** Cyborg's pci_str_to_json: sorted keys, Python's spacing. */
const bdf = (fn: string) => `{"bus": "3b", "device": "00", "domain": "0000", "function": "${fn}"}`;

/** An Alveo U280 (10ee:500c management PF under xclmgmt, 10ee:500d user PF under xocl) in one slot. */
const U280_HOST = [
  hostBridge,
  port('0000:3a:00.0', 0, 29),
  { address: '0000:3b:00.0', port: '0000:3a:00.0', cls: '120000', vendor: '10ee', device: '500c', subDevice: '000e', numa: 0, iommu: 30, driver: 'xclmgmt' },
  { address: '0000:3b:00.1', port: '0000:3a:00.0', cls: '120000', vendor: '10ee', device: '500d', subDevice: '000e', numa: 0, iommu: 31, driver: 'xocl' },
];

/**
 * Xilinx Alveo U280/U50 (issue 40): Cyborg 9.0.0's xilinx_fpga_driver saw only the user function
 * of such a card (lspci names the management one, so its "Xilinx Corporation Device" filter drops
 * it) and recorded the deployable `<host>_0000:3b:00.1` with that one handle, its provider
 * uuid3 of that name. Ours names the card after `.0` with both handles. The adoption maps the
 * record onto ours and keeps Cyborg's provider: the bound ARQ holds our `.1` handle, the first
 * report of our agent (the real Xilinx driver on the card's sysfs) creates and deletes no
 * provider, and the provider stays across a conductor restart and later reports.
 */
describe.skipIf(!mariadbUp || !svc.postgres)('adopting a Xilinx Alveo U280 that Cyborg named after its user function', () => {
  const host = `adopt-u280-${randomBytes(3).toString('hex')}`;
  const cyborgName = `${host}_0000:3b:00.1`;
  const ourName = `${host}_0000:3b:00.0`;
  const rp = uuid3(NAMESPACE_DNS, cyborgName);
  const instance = randomUUID();
  const arq = randomUUID();
  let source: Awaited<ReturnType<typeof loadDump>>;
  let target: Awaited<ReturnType<typeof freshDatabase>>;

  beforeAll(async () => {
    source = await loadDump('zed-fresh.sql');
    target = await freshDatabase('adoptu280');
    // The rows Cyborg 9.0.0's conductor writes for that report (its report_data, then the provider's uuid).
    const c = await mysql.createConnection({ uri: MARIADB, database: source.name, multipleStatements: true });
    const t = "'2026-12-02 01:00:00'";
    await c.query(
      `INSERT INTO devices VALUES (${t},NULL,100,'${randomUUID()}','FPGA','10ee','Xilinx Corporation Device','{"product_id": "500d", "controller": "Processing accelerators"}','{"vendor_info": "fpga_vb_info"}','${host}');
       INSERT INTO controlpath_ids VALUES (${t},NULL,100,'${randomUUID()}',100,'PCI','${bdf('1')}');
       INSERT INTO deployables VALUES (${t},NULL,100,'${randomUUID()}',NULL,NULL,'${cyborgName}',1,100,'${rp}','XILINX',NULL);
       INSERT INTO attributes VALUES (${t},NULL,100,'${randomUUID()}',100,'rc','FPGA'), (${t},NULL,101,'${randomUUID()}',100,'trait0','CUSTOM_FPGA_XILINX'),
         (${t},NULL,102,'${randomUUID()}',100,'trait1','CUSTOM_FPGA_PRODUCT_ID_500D');
       INSERT INTO attach_handles VALUES (${t},${t},100,'${randomUUID()}',100,100,1,'PCI','${bdf('1')}');
       INSERT INTO extended_accelerator_requests VALUES (${t},${t},100,'${arq}','${PROJECT}','Bound',1,'${host}','${rp}',100,'Initial',100,0,'${instance}');`,
    );
    await c.end();
  });
  afterAll(async () => {
    await source?.drop();
    await target?.drop();
  });

  it('the record becomes ours (.0, both handles) under the provider Cyborg made; the bound ARQ holds the .1 handle', async () => {
    const r = await cyborgProcess(['adopt', '--from', source.url], { env: { DATABASE_URL: target.url }, timeoutMs: 90_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/ 0 skipped$/m);
    const deps = await targetRows(
      target.url,
      `select p.name, p.rp_uuid, c.cpid_info from deployables p join devices d on d.id = p.device_id join controlpath_ids c on c.device_id = d.id where d.hostname = '${host}'`,
    );
    expect(deps).toEqual([{ name: ourName, rp_uuid: rp, cpid_info: bdf('0') }]);
    const handles = await targetRows(
      target.url,
      `select h.attach_info, h.in_use from attach_handles h join deployables p on p.id = h.deployable_id where p.name = '${ourName}' order by h.position`,
    );
    expect(handles).toEqual([
      { attach_info: bdf('0'), in_use: false },
      { attach_info: bdf('1'), in_use: true },
    ]);
    const [held] = await targetRows(
      target.url,
      `select r.state, r.device_rp_uuid, h.attach_info from extended_accelerator_requests r join attach_handles h on h.id = r.attach_handle_id where r.uuid = '${arq}'`,
    );
    expect(held).toEqual({ state: 'Bound', device_rp_uuid: rp, attach_info: bdf('1') });
    // Our driver on the card reports the same deployable id, name and handles as adopted.
    const [reported] = await new XilinxFpgaDriver({ host, sysfsRoot: buildHost(U280_HOST, 'adopt-u280') }).discover();
    const [acc] = await targetRows(target.url, `select id from accelerators where host = '${host}'`);
    expect(reported!.deployables.map((d) => [d.uuid, d.name, d.attachHandles.map((h) => h.attachInfo)])).toEqual([[acc!.id, ourName, [bdf('0'), bdf('1')]]]);
  }, 120_000);

  describe.skipIf(!svc.placement)('the cut-over against the real Placement', () => {
    let placement: PlacementClient;
    let root: string | undefined;
    let ours: CutOver | undefined;

    beforeAll(async () => {
      placement = new PlacementClient({ url: svc.placement!, timeoutMs: 30_000, ...placementAuthFor(svc.placement!) });
      // As Cyborg 9.0.0's conductor and Nova's scheduler left it: the card's provider under the compute node.
      root = (await placement.createProvider({ uuid: randomUUID(), name: host })).uuid;
      await placement.createProvider({ uuid: rp, name: cyborgName, parentUuid: root });
      const inv = await placement.putInventories(rp, 0, { FPGA: { total: 1, max_unit: 1 } });
      for (const t of ['CUSTOM_FPGA_XILINX', 'CUSTOM_FPGA_PRODUCT_ID_500D']) await placement.ensureTrait(t);
      await placement.putTraits(rp, inv.generation, ['CUSTOM_FPGA_XILINX', 'CUSTOM_FPGA_PRODUCT_ID_500D']);
      await placement.putAllocations(instance, {
        allocations: { [rp]: { resources: { FPGA: 1 } } },
        project_id: PROJECT,
        user_id: 'nova',
        consumer_generation: null,
      });
    });
    afterAll(async () => {
      await ours?.stop();
      await placement.deleteAllocations(instance);
      for (const consumer of Object.keys(await placement.providerAllocations(rp))) await placement.deleteAllocations(consumer);
      await placement.deleteProvider(rp);
      await placement.deleteProvider(uuid3(NAMESPACE_DNS, ourName));
      if (root) await placement.deleteProvider(root);
    });

    it("no provider created or deleted: Cyborg's provider keeps the card and Nova's allocation, through a conductor restart and later reports", async () => {
      const sysfsRoot = buildHost(U280_HOST, 'adopt-u280');
      ours = await cutOver(host, target.url, { drivers: (h) => [new XilinxFpgaDriver({ host: h, sysfsRoot })] });
      expect(ours.accelerators.map((a) => [a.name, a.rpUuid, a.state, a.capacity])).toEqual([[ourName, rp, 'attached', 2]]);
      expect(ours.accelerators[0]!.allocations.map((a) => a.instanceUuid)).toEqual([instance]);
      expect(ours.writes()).toMatchObject({ creates: 0, deletes: 0, allocations: 0 });
      expect(await placement.getProvider(uuid3(NAMESPACE_DNS, ourName))).toBeNull();
      expect((await placement.getUsages(rp)).FPGA).toBe(1);
      // Ours: two handles, so two in the inventory; the traits our driver reports (the management function's product id).
      expect((await placement.getInventories(rp)).inventories.FPGA?.total).toBe(2);

      // The kept provider is in our database, not only in memory: a restarted conductor and a new report keep it.
      await ours.stack.restartConductor();
      await ours.stack.restartAgent();
      const again = ours.stack.conductor;
      await expect.poll(() => again.listAccelerators({ host }).map((a) => [a.rpUuid, a.state]), { timeout: 30_000 }).toEqual([[rp, 'attached']]);
      expect(ours.writes()).toMatchObject({ creates: 0, deletes: 0 });
    }, 180_000);
  });
});
