import { sanitizeName, stableId } from '../../ids/index.js';
import type { AttachHandleT, DeployableT, DeviceT } from '../../model/index.js';

/** Helpers that spell out expected discovery results; ids follow the documented formulas. */
export const cpid = (bdf: string): string => {
  const [domain, bus, rest] = bdf.split(':') as [string, string, string];
  const [device, fn] = rest.split('.') as [string, string];
  return `{"bus": "${bus}", "device": "${device}", "domain": "${domain}", "function": "${fn}"}`;
};

export function pciHandle(host: string, bdf: string, depBdf = bdf): AttachHandleT {
  const name = sanitizeName(`${host}_${depBdf}`);
  return { uuid: stableId(host, 'handle', name, cpid(bdf)), attachType: 'PCI', attachInfo: cpid(bdf), inUse: false };
}

export function mdevHandle(host: string, bdf: string, type: string, i: number): AttachHandleT {
  const name = sanitizeName(`${host}_${bdf}`);
  const info = `{"asked_type": "${type}", "vgpu_mark": "${type}_${i}"}`;
  return { uuid: stableId(host, 'handle', name, info), attachType: 'MDEV', attachInfo: info, inUse: false };
}

export function deployable(host: string, bdf: string, rc: string, traits: string[], handles: AttachHandleT[]): DeployableT {
  const name = sanitizeName(`${host}_${bdf}`);
  return {
    uuid: stableId(host, 'deployable', name),
    name,
    numAccelerators: handles.length,
    driverName: 'generic',
    attributes: [{ key: 'rc', value: rc }, ...traits.map((t, i) => ({ key: `traits${i + 1}`, value: t }))],
    attachHandles: handles,
  };
}

export interface DeviceFacts {
  bdf: string;
  type: DeviceT['type'];
  vendor: string;
  product: string;
  model: string;
  cls: string;
  driver: string;
  iommu: string;
  numa: string;
  sub: [string, string];
  sriov: [number, number];
}

export function device(host: string, f: DeviceFacts, deployables: DeployableT[]): DeviceT {
  return {
    uuid: stableId(host, 'pci', f.bdf),
    type: f.type,
    vendor: `0x${f.vendor}`,
    model: f.model,
    stdBoardInfo: `{"class": "0x${f.cls}", "device_id": "0x${f.product}", "driver": "${f.driver}", "iommu_group": "${f.iommu}", "numa_node": "${f.numa}", "vendor_id": "0x${f.vendor}"}`,
    vendorBoardInfo: `{"sriov_numvfs": "${f.sriov[1]}", "sriov_totalvfs": "${f.sriov[0]}", "subsystem_device": "0x${f.sub[1]}", "subsystem_vendor": "0x${f.sub[0]}"}`,
    stub: false,
    controlPath: { type: 'PCI', info: cpid(f.bdf) },
    driver: 'generic',
    deployables,
  };
}
