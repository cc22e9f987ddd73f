import type { EntityManager } from '@mikro-orm/postgresql';
import { rpUuidOf, stableId } from '../ids/index.js';
import {
  AttachHandle,
  Attribute,
  ControlpathId,
  Deployable,
  Device,
  type IAttachHandle,
  type IAttribute,
  type IControlpathId,
  type IDeployable,
  type IDevice,
} from './entities/inventory.js';
import type { DeployableT, DeviceT } from '../model/index.js';

/**
 * Applies a host's full inventory report to its rows with Cyborg's identity rules
 * (reference/cyborg-internals.md §2): a device is its control-path info (per host), a deployable
 * its name within the device, an attribute its key, an attach handle its attach_info. Rows that
 * match are updated in place (their ids survive), new ones created, vanished ones removed.
 * Stub devices are ignored, as Cyborg's diff ignores them. With `scope`, only the devices whose
 * control-path info is in it are looked at (`existing` holds just those). Only marks changes on `em`.
 */
export function diffInventory(em: EntityManager, host: string, existing: IDevice[], report: DeviceT[], scope?: Set<string>): void {
  const byCpid = new Map<string, IDevice>();
  for (const d of existing) {
    const cp = d.controlpathIds.getItems()[0];
    if (cp) byCpid.set(cp.cpidInfo, d);
  }
  const kept = new Set<IDevice>();
  report.forEach((dev, position) => {
    if (dev.stub || (scope && !scope.has(dev.controlPath.info))) return;
    let row = byCpid.get(dev.controlPath.info);
    const fields = {
      uuid: dev.uuid,
      type: dev.type as IDevice['type'],
      vendor: dev.vendor,
      model: dev.model,
      stdBoardInfo: dev.stdBoardInfo,
      vendorBoardInfo: dev.vendorBoardInfo,
      hostname: host,
      driver: dev.driver,
      stub: false,
      position,
    };
    let cpid: IControlpathId;
    if (row) {
      em.assign(row, fields);
      cpid = row.controlpathIds.getItems()[0]!;
    } else {
      row = em.create(Device, fields) as IDevice;
      cpid = em.create(ControlpathId, {
        uuid: stableId(host, 'cpid', dev.controlPath.info),
        device: row,
        cpidType: 'PCI',
        cpidInfo: dev.controlPath.info,
      }) as IControlpathId;
    }
    kept.add(row);
    diffDeployables(em, row, cpid, dev.deployables);
  });
  for (const d of existing) {
    if (kept.has(d)) continue;
    for (const dep of d.deployables.getItems()) removeDeployable(em, dep);
    for (const cp of d.controlpathIds.getItems()) em.remove(cp);
    em.remove(d);
  }
}

function diffDeployables(em: EntityManager, device: IDevice, cpid: IControlpathId, report: DeployableT[]): void {
  const byName = new Map(device.deployables.isInitialized() ? device.deployables.getItems().map((d) => [d.name, d]) : []);
  const kept = new Set<IDeployable>();
  report.forEach((dep, position) => {
    const fields = {
      uuid: dep.uuid,
      name: dep.name,
      numAccelerators: dep.numAccelerators,
      driverName: dep.driverName,
      rpUuid: rpUuidOf(dep),
      position,
    };
    let row = byName.get(dep.name);
    if (row) em.assign(row, fields);
    else row = em.create(Deployable, { ...fields, device }) as IDeployable;
    kept.add(row);
    diffAttributes(em, row, dep);
    diffHandles(em, row, cpid, dep);
  });
  for (const d of byName.values()) if (!kept.has(d)) removeDeployable(em, d);
}

function diffAttributes(em: EntityManager, dep: IDeployable, report: DeployableT): void {
  const byKey = new Map<string, IAttribute>(dep.attributes.isInitialized() ? dep.attributes.getItems().map((a) => [a.key, a]) : []);
  report.attributes.forEach((a, position) => {
    const row = byKey.get(a.key);
    byKey.delete(a.key);
    if (row) em.assign(row, { value: a.value, position });
    else em.create(Attribute, { uuid: stableId(dep.uuid, 'attr', a.key), deployable: dep, key: a.key, value: a.value, position });
  });
  for (const gone of byKey.values()) em.remove(gone);
}

function diffHandles(em: EntityManager, dep: IDeployable, cpid: IControlpathId, report: DeployableT): void {
  const byInfo = new Map<string, IAttachHandle>(dep.attachHandles.isInitialized() ? dep.attachHandles.getItems().map((h) => [h.attachInfo, h]) : []);
  report.attachHandles.forEach((h, position) => {
    const row = byInfo.get(h.attachInfo);
    byInfo.delete(h.attachInfo);
    const fields = { uuid: h.uuid, inUse: h.inUse, attachType: h.attachType, position };
    if (row) em.assign(row, fields);
    else em.create(AttachHandle, { ...fields, deployable: dep, cpid, attachInfo: h.attachInfo });
  });
  for (const gone of byInfo.values()) em.remove(gone);
}

function removeDeployable(em: EntityManager, dep: IDeployable): void {
  for (const a of dep.attributes.getItems()) em.remove(a);
  for (const h of dep.attachHandles.getItems()) em.remove(h);
  em.remove(dep);
}
